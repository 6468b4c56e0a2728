// venvtx log [-n N] [--kind K] [--since TIME]
#include "command.hpp"

#include "venvtx/ops/history_session.hpp"
#include "venvtx/ops/log_filter.hpp"
#include "venvtx/report/state_text.hpp"
#include "venvtx/report/transaction_text.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/store/transaction_lines.hpp"
#include "venvtx/upkeep/gc.hpp"

#include <memory>

namespace venvtx::cli {

namespace {

struct LogFlags {
    std::optional<std::int64_t> limit;
    std::vector<std::string> kinds;
    std::optional<std::string> since;
};

} // namespace

Command register_log(CLI::App& parent) {
    auto flags = std::make_shared<LogFlags>();
    CLI::App* app = parent.add_subcommand("log", "the venv's history, newest first: transactions, changes made outside venvtx (>), stamps, runs");
    app->add_option("-n", flags->limit, "show at most N transactions")->check(k_how_many);
    app->add_option("--kind", flags->kinds,
                    "only entries of these kinds: remove, install, run, rollback, outside, stamp, exec (repeat, or comma-separate)");
    app->add_option("--since", flags->since, "only entries started at or after TIME (@-2h, @-1d, @2026-11-30T14:00, UTC)");
    return {app, [flags](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                LogFilter filter = parse_log_filter(flags->kinds, flags->since);
                bool filtered = !filter.kinds.empty() || !filter.since.empty();
                auto room = [&](std::size_t shown) { return !flags->limit || static_cast<std::int64_t>(shown) < *flags->limit; };
                HistorySession session(context, false); // records a change made outside venvtx first
                Store* store = session.has_store() ? &session.store() : nullptr;
                auto fetch = filtered ? std::optional<std::int64_t>() : flags->limit; // filtered: the limit counts what is shown
                std::optional<UnrecordedChange> unrecorded = session.unrecorded();
                if (out.json()) {
                    nlohmann::json list = nlohmann::json::array();
                    for (const auto& record : store ? store->history().list(fetch) : std::vector<TransactionRecord>()) {
                        if (room(list.size()) && log_shows(filter, record.kind, record.started_at)) {
                            list.push_back(transaction_json(record));
                        }
                    }
                    nlohmann::json pending;
                    if (unrecorded) {
                        pending = {{"dists", dist_changes_json(unrecorded->diff)}, {"why", unrecorded->why}};
                    }
                    out.document({{"transactions", list}, {"unrecorded", pending}});
                    return 0;
                }
                if (unrecorded) { // newest first: before every entry
                    std::string text = "changed outside venvtx since the last entry, not recorded (" + unrecorded->why + "):";
                    for (const auto& line : dist_diff_lines(unrecorded->diff)) {
                        text += "\n  " + line;
                    }
                    out.verdict(text);
                }
                std::string lines; // one write for the whole list, not one per transaction
                std::size_t shown = 0;
                for (const auto& tx : store ? transaction_lines(store->db(), fetch) : std::vector<TransactionLine>()) {
                    if (room(shown) && log_shows(filter, tx.kind, tx.started_at)) {
                        lines += (lines.empty() ? "" : "\n") + transaction_line(tx);
                        ++shown;
                    }
                }
                if (lines.empty()) {
                    out.say(filtered && store ? "no entries match" : "no transactions yet");
                } else {
                    out.say(transaction_line_header()); // not under -q: the lines alone
                    out.verdict(lines);
                }
                if (store && out.verbose()) {
                    out.say(describe_store(*store));
                }
                return 0;
            }};
}

} // namespace venvtx::cli
