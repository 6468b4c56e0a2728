// Wall-clock timestamps in the contract's form (UTC, ISO 8601, seconds).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace venvtx {

std::string utc_now_iso8601();
std::string utc_iso8601(std::int64_t epoch_seconds);
// The epoch seconds of a timestamp of that form; nullopt when it does not parse.
std::optional<std::int64_t> epoch_seconds(const std::string& iso8601);
// Seconds from a timestamp of that form until now; nullopt when it does not parse.
std::optional<std::int64_t> seconds_since(const std::string& iso8601);
// A time as people type it, in epoch seconds: back from now ("-2h", "-30m", "-45s", "-1d", at
// most 100 years), or a UTC date or date and time ("2026-11-30", "2026-11-30T14:00[:00][Z]");
// nullopt when it does not parse.
std::optional<std::int64_t> parse_time_point(const std::string& text);

} // namespace venvtx
