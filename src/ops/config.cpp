// configure(), saved_defaults(): the config keys, their checks, and where each value came from.
#include "venvtx/ops/config.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/ops/history_session.hpp"
#include "venvtx/probe/probe.hpp"
#include "venvtx/probe/probe_syntax.hpp"
#include "venvtx/store/retention.hpp"
#include "venvtx/store/settings.hpp"
#include "venvtx/txn/preview.hpp"
#include "venvtx/upkeep/gc.hpp"

#include <cmath>
#include <cstdlib>
#include <functional>

namespace venvtx {

namespace {

constexpr double k_week_s = 7 * 24 * 3600;

struct Key {
    const char* name;
    bool many;              // takes one or more values
    const char* when_unset; // the value in force when none is saved (nullptr: none)
};

// Retention keys take their defaults from RetentionPolicy::defaults().
const Key k_keys[] = {
    {"probe", true, nullptr},     {"gpus", false, "auto"},      {"preview", false, "auto"},
    {"probe-timeout", false, "300"}, {"keep", false, nullptr},  {"older-than", false, nullptr},
    {"max-size", false, nullptr}, {"auto-gc", false, nullptr},  {"hold", false, "link"},
};

const Key& find_key(const std::string& name) {
    for (const auto& key : k_keys) {
        if (name == key.name) {
            return key;
        }
    }
    std::string known;
    for (const auto& key : k_keys) {
        known += (known.empty() ? "" : ", ") + std::string(key.name);
    }
    throw Error(ExitCode::usage, "usage", "no config key '" + name + "' (keys: " + known + ")",
                {{"key", name}});
}

std::string setting_name(const Key& key) { return std::string("config.") + key.name; }

double timeout_from(const std::string& text) {
    char* end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0' || !std::isfinite(value) || value <= 0 || value > k_week_s) {
        throw usage_error("probe-timeout must be a number of seconds above 0, at most 604800 (a week), not '" +
                          text + "'");
    }
    return value;
}

// Checks `values` for `key`; throws a usage Error for a bad one.
void check_values(const Key& key, const std::vector<std::string>& values) {
    if (!key.many && values.size() != 1) {
        throw usage_error(std::string(key.name) + " takes one value, not " + std::to_string(values.size()));
    }
    const std::string& value = values.front();
    std::string name = key.name;
    if (name == "probe") {
        for (const auto& code : values) {
            if (code.empty()) {
                throw usage_error("probe code is empty");
            }
        }
    } else if (name == "gpus") {
        parse_gpu_expectation(value);
    } else if (name == "preview") {
        preview_mode_from(value);
    } else if (name == "probe-timeout") {
        timeout_from(value);
    } else if (name == "keep") {
        char* end = nullptr;
        long long n = std::strtoll(value.c_str(), &end, 10);
        if (end == value.c_str() || *end != '\0' || n < 1) {
            throw usage_error("keep takes a whole number, 1 or more, not '" + value + "'");
        }
    } else if (name == "older-than") {
        parse_duration(value);
    } else if (name == "max-size") {
        parse_size(value);
    } else if (name == "auto-gc" && value != "on" && value != "off") {
        throw usage_error("auto-gc takes on or off, not '" + value + "'");
    } else if (name == "hold" && value != "link" && value != "copy") {
        throw usage_error("hold takes link or copy, not '" + value + "'");
    }
}

bool is_retention(const Key& key) {
    std::string name = key.name;
    return name == "keep" || name == "older-than" || name == "max-size" || name == "auto-gc";
}

// `amount` in the largest unit that divides it ("30d", "20G").
std::string in_units(std::uint64_t amount, std::initializer_list<std::pair<std::uint64_t, const char*>> units,
                     const char* smallest) {
    for (const auto& [size, suffix] : units) {
        if (amount % size == 0) {
            return std::to_string(amount / size) + suffix;
        }
    }
    return std::to_string(amount) + smallest;
}

// A retention key's value within `policy`, as a person writes it ("" when the rule is off).
std::string retention_text(const Key& key, const RetentionPolicy& policy) {
    std::string name = key.name;
    if (name == "keep") {
        return policy.keep_last ? std::to_string(*policy.keep_last) : "";
    }
    if (name == "older-than") {
        return policy.keep_seconds ? in_units(*policy.keep_seconds, {{86400, "d"}, {3600, "h"}, {60, "m"}}, "s") : "";
    }
    if (name == "max-size") {
        return policy.max_bytes ? in_units(*policy.max_bytes, {{1'000'000'000, "G"}, {1'000'000, "M"}, {1000, "K"}}, "")
                                : "";
    }
    return policy.automatic ? "on" : "off";
}

void set_retention(const Key& key, RetentionPolicy& policy, const std::optional<std::string>& value) {
    RetentionPolicy defaults = RetentionPolicy::defaults();
    std::string name = key.name;
    if (name == "keep") {
        policy.keep_last = value ? std::optional<std::int64_t>(std::strtoll(value->c_str(), nullptr, 10))
                                 : defaults.keep_last;
    } else if (name == "older-than") {
        policy.keep_seconds = value ? std::optional<std::int64_t>(parse_duration(*value)) : defaults.keep_seconds;
    } else if (name == "max-size") {
        policy.max_bytes = value ? std::optional<std::uint64_t>(parse_size(*value)) : defaults.max_bytes;
    } else {
        policy.automatic = value ? *value == "on" : defaults.automatic;
    }
}

std::vector<std::string> stored_values(Database& db, const Key& key) {
    std::optional<std::string> text = read_setting(db, setting_name(key));
    if (!text) {
        return {};
    }
    nlohmann::json values = nlohmann::json::parse(*text, nullptr, false);
    return values.is_array() ? values.get<std::vector<std::string>>() : std::vector<std::string>{};
}

struct Shown {
    std::string key;
    nlohmann::json value;  // a string, a list for probe, or null when unset
    std::string source;    // "store" or "default"
};

std::vector<Shown> current(Store* store) {
    std::vector<Shown> shown;
    RetentionPolicy policy = store ? load_policy(store->db()) : RetentionPolicy::defaults();
    bool policy_saved = store && read_setting(store->db(), "automatic");
    for (const auto& key : k_keys) {
        if (is_retention(key)) {
            std::string text = retention_text(key, policy);
            shown.push_back({key.name, text.empty() ? nlohmann::json() : nlohmann::json(text),
                             policy_saved ? "store" : "default"});
            continue;
        }
        std::vector<std::string> values = store ? stored_values(store->db(), key) : std::vector<std::string>{};
        nlohmann::json value = !values.empty() ? (key.many ? nlohmann::json(values) : nlohmann::json(values.front()))
                               : key.when_unset ? nlohmann::json(key.when_unset)
                                                : nlohmann::json();
        shown.push_back({key.name, value, values.empty() ? "default" : "store"});
    }
    return shown;
}

std::string value_text(const nlohmann::json& value) {
    if (value.is_null()) {
        return "(not set)";
    }
    if (value.is_string()) {
        return value.get<std::string>();
    }
    std::string text;
    for (const auto& item : value) {
        text += (text.empty() ? "" : "; ") + item.get<std::string>();
    }
    return text;
}

void print(const Context& context, const std::vector<Shown>& shown) {
    if (context.out.json()) {
        nlohmann::json settings = nlohmann::json::array();
        for (const auto& item : shown) {
            settings.push_back({{"key", item.key}, {"value", item.value}, {"source", item.source}});
        }
        context.out.document({{"settings", settings}, {"store", context.store_root.string()}});
        return;
    }
    for (const auto& item : shown) {
        context.out.verdict(item.key + " = " + value_text(item.value) +
                            (item.source == "store" ? "" : "   (default)"));
    }
}

} // namespace

SavedDefaults saved_defaults(const Context& context) {
    SavedDefaults saved;
    if (!Store::exists(context.store_root)) {
        return saved;
    }
    Store store(context.store_root, false);
    saved.probe = stored_values(store.db(), find_key("probe"));
    auto one = [&](const char* name) {
        std::vector<std::string> values = stored_values(store.db(), find_key(name));
        return values.empty() ? std::nullopt : std::optional<std::string>(values.front());
    };
    saved.gpus = one("gpus");
    saved.preview = one("preview");
    if (auto timeout = one("probe-timeout")) {
        saved.probe_timeout = timeout_from(*timeout);
    }
    return saved;
}

void configure(const Context& context, const ConfigRequest& request) {
    if (!request.key) {
        if (request.unset) {
            throw usage_error("--unset needs a key: venvtx config KEY --unset");
        }
        HistorySession session(context, false);
        print(context, current(session.has_store() ? &session.store() : nullptr));
        return;
    }
    const Key& key = find_key(*request.key);
    if (request.unset && !request.values.empty()) {
        throw usage_error("--unset takes no value: venvtx config " + *request.key + " --unset");
    }
    if (request.values.empty() && !request.unset) {
        HistorySession session(context, false);
        std::vector<Shown> all = current(session.has_store() ? &session.store() : nullptr);
        std::erase_if(all, [&](const Shown& item) { return item.key != key.name; });
        print(context, all);
        return;
    }
    if (!request.unset) {
        check_values(key, request.values);
        if (key.name == std::string("probe")) {
            check_probe_syntax(context.layout, request.values);
        }
    }
    HistorySession session(context, true);
    Database& db = session.store().db();
    if (is_retention(key)) {
        RetentionPolicy policy = load_policy(db);
        set_retention(key, policy, request.unset ? std::nullopt : std::optional(request.values.front()));
        save_policy(db, policy);
    } else if (request.unset) {
        delete_setting(db, setting_name(key));
    } else {
        write_setting(db, setting_name(key), nlohmann::json(request.values).dump());
    }
    std::vector<Shown> all = current(&session.store());
    std::erase_if(all, [&](const Shown& item) { return item.key != key.name; });
    print(context, all);
}

} // namespace venvtx
