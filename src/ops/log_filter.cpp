// parse_log_filter: the kinds checked against the entry kinds, the time through the clock's parser.
#include "venvtx/ops/log_filter.hpp"

#include "venvtx/core/clock.hpp"
#include "venvtx/core/closest.hpp"
#include "venvtx/core/error.hpp"

#include <algorithm>
#include <sstream>

namespace venvtx {

namespace {

const std::vector<std::string> k_kinds = {"remove", "install", "run", "sync", "rollback", "outside", "stamp", "exec"};

} // namespace

LogFilter parse_log_filter(const std::vector<std::string>& kinds, const std::optional<std::string>& since) {
    LogFilter filter;
    for (const auto& typed : kinds) {
        std::stringstream parts(typed);
        for (std::string kind; std::getline(parts, kind, ',');) {
            if (std::find(k_kinds.begin(), k_kinds.end(), kind) == k_kinds.end()) {
                auto near = closest(kind, k_kinds);
                std::string known;
                for (const auto& name : k_kinds) {
                    known += (known.empty() ? "" : ", ") + name;
                }
                throw usage_error("--kind: no entry kind '" + kind + "'" +
                                  (near ? " (did you mean '" + *near + "'?)" : "") + "; kinds: " + known);
            }
            filter.kinds.push_back(kind);
        }
    }
    if (since) {
        std::string text = !since->empty() && since->front() == '@' ? since->substr(1) : *since;
        auto when = parse_time_point(text);
        if (!when) {
            throw usage_error("--since: '" + *since + "' is not a time (@-2h, @-1d, @2026-11-30T14:00, UTC)");
        }
        filter.since = utc_iso8601(*when);
    }
    return filter;
}

bool log_shows(const LogFilter& filter, const std::string& kind, const std::string& started_at) {
    bool kind_ok = filter.kinds.empty() || std::find(filter.kinds.begin(), filter.kinds.end(), kind) != filter.kinds.end();
    return kind_ok && (filter.since.empty() || started_at >= filter.since);
}

} // namespace venvtx
