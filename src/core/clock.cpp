// utc_now_iso8601 ("2026-11-29T17:02:03Z"), the age of such a timestamp, and times as typed.
#include "venvtx/core/clock.hpp"

#include <charconv>
#include <ctime>
#include <string_view>

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

std::optional<std::int64_t> parse_time_point(const std::string& text) {
    if (text.size() > 2 && text[0] == '-') {
        std::int64_t amount = 0;
        std::string_view digits = std::string_view(text).substr(1, text.size() - 2);
        auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), amount);
        char unit_name = text.back();
        int unit = unit_name == 's' ? 1 : unit_name == 'm' ? 60 : unit_name == 'h' ? 3600 : unit_name == 'd' ? 86400 : 0;
        constexpr std::int64_t k_hundred_years = 36525LL * 86400;  // the contract's longest duration
        if (error != std::errc() || end != digits.data() + digits.size() || amount < 0 || unit == 0 ||
            amount > k_hundred_years / unit) {
            return std::nullopt; // past 100 years it would overflow, or wrap to the future
        }
        return static_cast<std::int64_t>(std::time(nullptr)) - amount * unit;
    }
    for (const char* format : {"%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%MZ", "%Y-%m-%dT%H:%M",
                               "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"}) {
        std::tm parts{};
        const char* end = ::strptime(text.c_str(), format, &parts);
        if (end != nullptr && *end == '\0') {
            return static_cast<std::int64_t>(::timegm(&parts));
        }
    }
    return std::nullopt;
}

} // namespace venvtx
