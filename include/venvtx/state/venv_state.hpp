// A venv's state: the set of its installed distributions, named by the sha256 of their canonical
// JSON (a venv that returns to an earlier state gets the same id), and what differs between two.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace venvtx {

struct DistState {
    std::string name;        // as METADATA spells it
    std::string normalized;  // PEP 503
    std::string version;
    std::string dist_info;   // venv-relative
    std::string installer;   // INSTALLER's first line; empty when there is none
    std::string record;      // sha256 (hex) of RECORD's bytes; empty when there is none
    bool shadowed = false;   // a dist-info of the same name comes first: pip sees that one

    bool operator==(const DistState&) const = default;
};

struct VenvState {
    std::string id;
    std::vector<DistState> dists;  // by normalized name, then dist-info
};

nlohmann::json dist_json(const DistState& dist);
DistState dist_from_json(const nlohmann::json& json);
nlohmann::json dists_json(const std::vector<DistState>& dists);
std::vector<DistState> dists_from_json(const nlohmann::json& json);

// Sorts `dists` and names the state.
VenvState make_state(std::vector<DistState> dists);
// The first 12 hex digits of a state id: what people read.
std::string short_state_id(const std::string& id);

// One distribution that differs: absent on one side when added or removed.
struct DistChange {
    std::string name;
    std::optional<DistState> before;
    std::optional<DistState> after;
};

// Every distribution added, removed or changed (in version, installer, RECORD or dist-info)
// from `from` to `to`, by normalized name.
std::vector<DistChange> state_changes(const VenvState& from, const VenvState& to);

} // namespace venvtx
