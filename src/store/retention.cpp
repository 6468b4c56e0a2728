// Retention policy: defaults, the settings table, and parsing durations and sizes.
#include "venvtx/store/retention.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/store/settings.hpp"

#include <cmath>
#include <cstdlib>

namespace venvtx {

namespace {

// Past these a figure is a typo, and the arithmetic that uses it (an age compared in seconds, a
// byte count in SQLite's 64-bit integers) would overflow.
constexpr double k_most_seconds = 100 * 365.25 * 24 * 3600;
constexpr double k_most_bytes = 1e18;

std::optional<std::int64_t> setting_number(Database& db, const char* name) {
    std::optional<std::string> value = read_setting(db, name);
    if (!value || *value == "none") {
        return std::nullopt;
    }
    return std::strtoll(value->c_str(), nullptr, 10);
}

std::string optional_text(const std::optional<std::int64_t>& value) {
    return value ? std::to_string(*value) : "none";
}

// The number at the start of `text` and the suffix after it.
std::pair<double, std::string> split_number(const std::string& text, const char* what) {
    char* end = nullptr;
    double number = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || number < 0 || !std::isfinite(number)) {
        throw usage_error(std::string("not a ") + what + ": '" + text + "'");
    }
    return {number, std::string(end)};
}

} // namespace

RetentionPolicy RetentionPolicy::defaults() {
    RetentionPolicy policy;
    policy.keep_last = 20;
    policy.keep_seconds = 30LL * 24 * 3600;
    policy.max_bytes = 20'000'000'000ULL;
    return policy;
}

nlohmann::json RetentionPolicy::json() const {
    auto number = [](const auto& value) { return value ? nlohmann::json(*value) : nlohmann::json(); };
    return {{"keep_last", number(keep_last)},
            {"keep_seconds", number(keep_seconds)},
            {"max_bytes", number(max_bytes)},
            {"automatic", automatic}};
}

RetentionPolicy load_policy(Database& db) {
    RetentionPolicy policy = RetentionPolicy::defaults();
    if (!read_setting(db, "automatic")) { // save_policy() writes all four: none saved yet
        return policy;
    }
    // A rule that keeps nothing (saved by a venvtx that did not refuse it) is no rule: the store
    // is never emptied by its own policy.
    auto positive = [](std::optional<std::int64_t> value) { return value && *value > 0 ? value : std::nullopt; };
    policy.keep_last = positive(setting_number(db, "keep_last"));
    policy.keep_seconds = positive(setting_number(db, "keep_seconds"));
    auto bytes = setting_number(db, "max_bytes");
    policy.max_bytes = bytes && *bytes >= 0 ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(*bytes))
                                            : std::nullopt;
    policy.automatic = setting_number(db, "automatic").value_or(1) != 0;
    return policy;
}

void save_policy(Database& db, const RetentionPolicy& policy) {
    SqlTransaction transaction(db);
    write_setting(db, "keep_last", optional_text(policy.keep_last));
    write_setting(db, "keep_seconds", optional_text(policy.keep_seconds));
    write_setting(db, "max_bytes", policy.max_bytes ? std::to_string(*policy.max_bytes) : std::string("none"));
    write_setting(db, "automatic", policy.automatic ? "1" : "0");
    transaction.commit();
}

std::int64_t parse_duration(const std::string& text) {
    auto [number, unit] = split_number(text, "duration (e.g. 30d, 12h)");
    double seconds = unit == "s" || unit.empty() ? 1 : unit == "m" ? 60 : unit == "h" ? 3600
                   : unit == "d" ? 86400 : unit == "w" ? 7 * 86400 : -1;
    if (seconds < 0) {
        throw usage_error("not a duration (e.g. 30d, 12h, 90m, 2w): '" + text + "'");
    }
    if (number * seconds > k_most_seconds) {
        throw usage_error("a duration of at most 100 years (5218w), not '" + text + "'");
    }
    return static_cast<std::int64_t>(number * seconds);
}

std::uint64_t parse_size(const std::string& text) {
    auto [number, unit] = split_number(text, "size (e.g. 10G, 500M)");
    std::string upper;
    for (char c : unit) {
        upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    bool binary = upper.size() == 3 && upper.substr(1) == "IB";  // GiB: powers of 1024
    if (binary || (upper.size() == 2 && upper.back() == 'B')) {
        upper.resize(1); // "GB" -> "G"
    }
    const std::string prefixes = "KMGT";
    std::size_t found = upper.size() == 1 ? prefixes.find(upper) : std::string::npos;
    bool plain = upper.empty() || upper == "B";
    std::size_t power = plain ? 0 : found + 1;
    if (!plain && found == std::string::npos) {
        throw usage_error("not a size (e.g. 10G, 500M, 2GiB): '" + text + "'");
    }
    double bytes = number * std::pow(binary ? 1024.0 : 1000.0, static_cast<double>(power));
    if (bytes > k_most_bytes) {
        throw usage_error("a size of at most 1000000T (an exabyte), not '" + text + "'");
    }
    return static_cast<std::uint64_t>(bytes);
}

} // namespace venvtx
