// utc_now_iso8601 ("2026-11-29T17:02:03Z") and the age of such a timestamp.
#include "venvtx/core/clock.hpp"

#include <ctime>

namespace venvtx {

std::string utc_now_iso8601() {
    std::time_t now = std::time(nullptr);
    std::tm parts{};
    ::gmtime_r(&now, &parts);
    char buffer[32];
    std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &parts);
    return buffer;
}

std::optional<std::int64_t> seconds_since(const std::string& iso8601) {
    std::tm parts{};
    const char* end = ::strptime(iso8601.c_str(), "%Y-%m-%dT%H:%M:%SZ", &parts);
    if (end == nullptr || *end != '\0') {
        return std::nullopt;
    }
    return static_cast<std::int64_t>(std::time(nullptr) - ::timegm(&parts));
}

} // namespace venvtx
