// dist_diff_lines, library_diff_lines, file_flag_lines, freeze_lines and the diff's JSON.
#include "venvtx/report/state_text.hpp"

#include "venvtx/core/output.hpp"

#include <cstdlib>

namespace venvtx {

namespace {

std::string signed_bytes(std::int64_t delta) {
    std::string text = delta < 0 ? "-" : "+"; // appended: g++ 12 misreads the `"-" + string` form (-Wrestrict)
    return text.append(human_bytes(static_cast<std::uint64_t>(std::llabs(delta))));
}

nlohmann::json optional_text(const std::optional<std::string>& text) { return text ? nlohmann::json(*text) : nullptr; }

// Names in `one` that `other` lacks, with their providers.
nlohmann::json missing_from(const std::map<std::string, std::string>& one, const std::map<std::string, std::string>& other) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [name, provider] : one) {
        if (other.count(name) == 0) {
            list.push_back({{"library", name}, {"provider", provider}});
        }
    }
    return list;
}

} // namespace

std::vector<std::string> dist_diff_lines(const StateDiff& diff) {
    std::vector<std::string> lines;
    for (const auto& dist : diff.dists) {
        std::string versions = dist.before && dist.after && *dist.before == *dist.after
                                   ? *dist.after + " (files changed)"
                                   : dist.before.value_or("∅") + " → " + dist.after.value_or("∅");
        lines.push_back(dist.name + ": " + versions + (dist.size_delta != 0 ? ", " + signed_bytes(dist.size_delta) : ""));
    }
    if (lines.empty()) {
        lines.push_back("no distribution differs");
    }
    return lines;
}

std::vector<std::string> library_diff_lines(const StateDiff& diff, bool named) {
    std::vector<std::string> lines;
    for (const auto& item : missing_from(diff.libs_before, diff.libs_after)) {
        lines.push_back("lost: " + item["library"].get<std::string>() + " (" + item["provider"].get<std::string>() + ")");
    }
    for (const auto& item : missing_from(diff.libs_after, diff.libs_before)) {
        lines.push_back("gained: " + item["library"].get<std::string>() + " (" + item["provider"].get<std::string>() + ")");
    }
    if (lines.empty()) {
        lines.push_back("libraries: the same " + std::to_string(diff.libs_after.size()) + " on both sides" +
                        (named && !diff.libs_after.empty() ? ":" : ""));
        for (const auto& [library, provider] : named ? diff.libs_after : std::map<std::string, std::string>()) {
            lines.push_back("  " + library + " (" + provider + ")");
        }
    }
    return lines;
}

std::vector<std::string> file_flag_lines(const StateDiff& diff) {
    std::vector<std::string> lines;
    for (const auto& file : diff.files) {
        lines.push_back(std::string(1, file.flag) + " " + file.path + " (" + file.dist + ")");
    }
    return lines;
}

nlohmann::json dist_changes_json(const StateDiff& diff) {
    nlohmann::json dists = nlohmann::json::array();
    for (const auto& dist : diff.dists) {
        dists.push_back({{"name", dist.name}, {"before", optional_text(dist.before)}, {"after", optional_text(dist.after)},
                         {"size_delta", dist.size_delta}});
    }
    return dists;
}

nlohmann::json state_diff_json(const HistoryPoint& from, const HistoryPoint& to, const StateDiff& diff,
                               bool with_files, bool with_libs) {
    auto point = [](const HistoryPoint& p) {
        return nlohmann::json{{"point", p.text}, {"state", p.state},
                              {"entry", p.entry ? nlohmann::json(*p.entry) : nlohmann::json()}};
    };
    nlohmann::json json = {{"from", point(from)}, {"to", point(to)}, {"dists", dist_changes_json(diff)}, {"files", nullptr},
                           {"libraries", nullptr}}; // null: not asked for
    if (with_files) {
        json["files"] = nlohmann::json::array();
        for (const auto& file : diff.files) {
            json["files"].push_back({{"flag", std::string(1, file.flag)}, {"path", file.path}, {"dist", file.dist}});
        }
    }
    if (with_libs) {
        json["libraries"] = {{"lost", missing_from(diff.libs_before, diff.libs_after)},
                             {"gained", missing_from(diff.libs_after, diff.libs_before)},
                             {"before", diff.libs_before},
                             {"after", diff.libs_after}};
    }
    return json;
}

std::vector<std::string> freeze_lines(const VenvState& state) {
    std::vector<std::string> lines; // a state lists its distributions by normalized name
    for (const auto& dist : state.dists) {
        if (!dist.shadowed) { // as pip freeze: the first dist-info of a name alone
            lines.push_back(dist.name + "==" + dist.version);
        }
    }
    return lines;
}

} // namespace venvtx
