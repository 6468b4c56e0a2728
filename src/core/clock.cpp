// utc_now_iso8601 ("2026-11-29T17:02:03Z") and the age of such a timestamp.
#include "venvtx/core/clock.hpp"

#include <ctime>

namespace venvtx {

std::string utc_now_iso8601() { return utc_iso8601(std::time(nullptr)); }

std::string utc_iso8601(std::int64_t epoch_seconds) {
    std::time_t when = static_cast<std::time_t>(epoch_seconds);
    std::tm parts{};
    ::gmtime_r(&when, &parts);
    char buffer[32];
    std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &parts);
    return buffer;
}

std::optional<std::int64_t> epoch_seconds(const std::string& iso8601) {
    std::tm parts{};
    const char* end = ::strptime(iso8601.c_str(), "%Y-%m-%dT%H:%M:%SZ", &parts);
    if (end == nullptr || *end != '\0') {
        return std::nullopt;
    }
    return static_cast<std::int64_t>(::timegm(&parts));
}

std::optional<std::int64_t> seconds_since(const std::string& iso8601) {
    auto then = epoch_seconds(iso8601);
    return then ? std::optional<std::int64_t>(std::time(nullptr) - *then) : std::nullopt;
}

} // namespace venvtx
