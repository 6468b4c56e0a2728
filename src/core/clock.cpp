// utc_now_iso8601: "2026-11-29T17:02:03Z".
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

} // namespace venvtx
