// `venvtx log --kind K --since TIME`: which entries a person asked to see (exec runs will
// outnumber the changes).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace venvtx {

struct LogFilter {
    std::vector<std::string> kinds;  // none: every kind
    std::string since;               // ISO 8601 UTC, "" for no bound
};

// From the flags as typed: kinds (repeated or comma-separated) among the entry kinds, a time as
// `diff` takes it (`@-2h`, `@2026-11-30T14:00`, with or without the @). A bad one is a usage Error.
LogFilter parse_log_filter(const std::vector<std::string>& kinds, const std::optional<std::string>& since);

bool log_shows(const LogFilter& filter, const std::string& kind, const std::string& started_at);

} // namespace venvtx
