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

} // namespace venvtx
