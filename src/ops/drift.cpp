// find_drift: the venv's current state against what undone transactions left.
#include "venvtx/ops/drift.hpp"

#include "venvtx/core/sha256.hpp"

#include <map>
#include <set>

namespace venvtx {

namespace {

std::string describe(const NodeState& state) {
    switch (state.type) {
    case NodeType::absent:
        return "absent";
    case NodeType::dir:
        return "a directory";
    case NodeType::symlink:
        return "a symlink to " + state.link_target;
    case NodeType::file:
        return "a file of " + std::to_string(state.size) + " bytes";
    case NodeType::special:
        return "a " + state.link_target + " node";
    }
    return "?";
}

// Empty when `current` is `expected`; otherwise what was found instead.
std::string difference(const std::filesystem::path& full, const NodeState& current,
                       const NodeState& expected) {
    if (current.type != expected.type) {
        return describe(current) + " where " +
               (expected.type == NodeType::absent ? std::string("nothing") : describe(expected)) +
               " was left";
    }
    if (current.type == NodeType::absent) {
        return "";
    }
    if (current.mode != expected.mode) {
        return describe(current) + " whose mode changed";
    }
    if ((current.type == NodeType::symlink || current.type == NodeType::special) &&
        current.link_target != expected.link_target) {
        return describe(current) + " (was to " + expected.link_target + ")";
    }
    if (current.type != NodeType::file) {
        return "";
    }
    if (current.size != expected.size) {
        return describe(current) + " (was " + std::to_string(expected.size) + ")";
    }
    if (!expected.object.empty()) {
        return sha256_file(full).hex == expected.object ? ""
                                                        : describe(current) + " with other content";
    }
    return current.mtime_ns == expected.mtime_ns ? "" : describe(current) + " modified since";
}

} // namespace

std::vector<DriftedPath> find_drift(const VenvLayout& layout, History& history,
                                    const std::vector<TransactionRecord>& undone) {
    // path -> the before-state of the nearest newer transaction that touched it.
    std::map<std::string, NodeState> expected_by_newer;
    std::vector<DriftedPath> drifted;
    std::set<std::string> reported;
    for (const auto& record : undone) {
        std::map<std::string, NodeState> befores;
        for (const auto& entry : history.entries(record.id)) {
            auto newer = expected_by_newer.find(entry.path);
            std::string found;
            if (newer == expected_by_newer.end()) {
                std::filesystem::path full = layout.root / entry.path;
                found = difference(full, observe_node(full), entry.after);
            } else if (newer->second.type != entry.after.type ||
                       (entry.after.type == NodeType::file && !entry.after.object.empty() &&
                        !newer->second.object.empty() &&
                        entry.after.object != newer->second.object)) {
                found = "changed outside venvtx between tx " + std::to_string(record.id) +
                        " and a later one";
            }
            if (!found.empty() && reported.insert(entry.path).second) {
                drifted.push_back({entry.path, found});
            }
            befores[entry.path] = entry.before;
        }
        for (auto& [path, state] : befores) {
            expected_by_newer[path] = state;
        }
    }
    return drifted;
}

namespace {

// The distributions whose dist-info changed ("alpha-3.0.dist-info/RECORD" -> "alpha-3.0").
std::set<std::string> drifted_distributions(const std::vector<DriftedPath>& drifted) {
    std::set<std::string> dists;
    for (const auto& item : drifted) {
        auto at = item.path.find(".dist-info/");
        if (at != std::string::npos) {
            auto slash = item.path.rfind('/', at);
            dists.insert(item.path.substr(slash == std::string::npos ? 0 : slash + 1,
                                          at - (slash == std::string::npos ? 0 : slash + 1)));
        }
    }
    return dists;
}

} // namespace

nlohmann::json drift_json(const std::vector<DriftedPath>& drifted) {
    nlohmann::json paths = nlohmann::json::array();
    for (const auto& item : drifted) {
        paths.push_back({{"path", item.path}, {"found", item.found}});
    }
    return {{"paths", paths}, {"distributions", drifted_distributions(drifted)}};
}

std::string describe_drift(const std::vector<DriftedPath>& drifted) {
    std::set<std::string> dists = drifted_distributions(drifted);
    std::string text = std::to_string(drifted.size()) + " path" + (drifted.size() == 1 ? "" : "s") +
                       " changed since:";
    for (std::size_t i = 0; i < drifted.size() && i < 3; ++i) {
        text += (i ? "; " : " ") + drifted[i].path + " is " + drifted[i].found;
    }
    if (drifted.size() > 3) {
        text += "; ...";
    }
    if (!dists.empty()) {
        text += " (distributions changed:";
        for (const auto& dist : dists) {
            text += " " + dist;
        }
        text += ")";
    }
    return text;
}

} // namespace venvtx
