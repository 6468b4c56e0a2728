// VenvState: canonical JSON, ids, and the changes between two states.
#include "venvtx/state/venv_state.hpp"

#include "venvtx/core/sha256.hpp"

#include <algorithm>
#include <map>

namespace venvtx {

nlohmann::json dist_json(const DistState& dist) {
    nlohmann::json json = {{"name", dist.name},           {"normalized", dist.normalized},
                           {"version", dist.version},     {"dist_info", dist.dist_info},
                           {"installer", dist.installer}, {"record", dist.record}};
    if (dist.shadowed) { // only then: the ids of states recorded before the field stay theirs
        json["shadowed"] = true;
    }
    return json;
}

DistState dist_from_json(const nlohmann::json& json) {
    return {json.at("name").get<std::string>(),      json.at("normalized").get<std::string>(),
            json.at("version").get<std::string>(),   json.at("dist_info").get<std::string>(),
            json.at("installer").get<std::string>(), json.at("record").get<std::string>(),
            json.value("shadowed", false)};
}

nlohmann::json dists_json(const std::vector<DistState>& dists) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& dist : dists) {
        list.push_back(dist_json(dist));
    }
    return list;
}

std::vector<DistState> dists_from_json(const nlohmann::json& json) {
    std::vector<DistState> dists;
    for (const auto& item : json) {
        dists.push_back(dist_from_json(item));
    }
    return dists;
}

VenvState make_state(std::vector<DistState> dists) {
    std::sort(dists.begin(), dists.end(), [](const DistState& a, const DistState& b) {
        return a.normalized != b.normalized ? a.normalized < b.normalized : a.dist_info < b.dist_info;
    });
    VenvState state;
    state.id = sha256_hex(dists_json(dists).dump());
    state.dists = std::move(dists);
    return state;
}

std::string short_state_id(const std::string& id) { return id.substr(0, 12); }

namespace {

// By normalized name; a name installed twice (two dist-infos) keys its later ones by dist-info.
std::map<std::string, const DistState*> by_name(const VenvState& state) {
    std::map<std::string, const DistState*> named;
    for (const auto& dist : state.dists) {
        if (!named.emplace(dist.normalized, &dist).second) {
            named.emplace(dist.normalized + " (" + dist.dist_info + ")", &dist);
        }
    }
    return named;
}

} // namespace

std::vector<DistChange> state_changes(const VenvState& from, const VenvState& to) {
    std::map<std::string, DistChange> changes;
    auto before = by_name(from);
    auto after = by_name(to);
    for (const auto& [key, dist] : before) {
        auto found = after.find(key);
        if (found == after.end() || !(*found->second == *dist)) {
            DistChange& change = changes[key];
            change.name = dist->name;
            change.before = *dist;
        }
    }
    for (const auto& [key, dist] : after) {
        auto found = before.find(key);
        if (found == before.end() || !(*found->second == *dist)) {
            DistChange& change = changes[key];
            change.name = dist->name;
            change.after = *dist;
        }
    }
    std::vector<DistChange> list;
    for (auto& [key, change] : changes) {
        list.push_back(std::move(change));
    }
    return list;
}

} // namespace venvtx
