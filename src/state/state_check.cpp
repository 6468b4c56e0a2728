// check_state: observe, compare with the last recorded state, record what differs.
#include "venvtx/state/state_check.hpp"

#include "venvtx/core/clock.hpp"
#include "venvtx/state/observe.hpp"
#include "venvtx/state/state_index.hpp"

#include <set>
#include <sys/stat.h>

namespace venvtx {

namespace {

nlohmann::json side_json(const std::optional<DistState>& dist) {
    if (!dist) {
        return nullptr;
    }
    return {{"version", dist->version}, {"installer", dist->installer}, {"dist_info", dist->dist_info}};
}

std::optional<std::string> version_of(const std::optional<DistState>& dist) {
    return dist ? std::optional(dist->version) : std::nullopt;
}

} // namespace

nlohmann::json outside_details(const VenvLayout& layout, const std::vector<DistChange>& changes) {
    nlohmann::json dists = nlohmann::json::array();
    std::set<std::string> installers;
    for (const auto& change : changes) {
        nlohmann::json item = {{"name", change.name}, {"before", side_json(change.before)},
                               {"after", side_json(change.after)}};
        if (change.after) {
            struct stat st {};
            if (::lstat((layout.root / change.after->dist_info).c_str(), &st) == 0) {
                item["after"]["written_at"] = utc_iso8601(st.st_mtim.tv_sec);
            }
            if (!change.after->installer.empty()) {
                installers.insert(change.after->installer);
            }
        }
        dists.push_back(std::move(item));
    }
    return {{"dists", dists}, {"installers", installers}};
}

StateCheck check_state(const VenvLayout& layout, Store& store) {
    History& history = store.history();
    StateCheck check{observe_state(layout, store.db()), std::nullopt};
    if (store.db().read_only()) {
        return check;
    }
    std::optional<std::string> last = history.last_state();
    if (!last) {
        history.note_last_state(check.now.id);
        return check;
    }
    if (*last == check.now.id) {
        return check;
    }
    std::optional<VenvState> before = load_state(store.db(), *last);
    std::vector<DistChange> changes = state_changes(before.value_or(VenvState{}), check.now);
    RecordedEntry entry;
    entry.kind = "outside";
    entry.started_at = history.last_recorded_at().value_or(utc_now_iso8601());
    entry.finished_at = utc_now_iso8601();
    entry.state_before = *last;
    entry.state_after = check.now.id;
    entry.details = outside_details(layout, changes);
    (*entry.details)["window"] = {{"from", entry.started_at}, {"to", entry.finished_at}};
    for (const auto& change : changes) {
        entry.packages.push_back({change.name, version_of(change.before), version_of(change.after)});
    }
    std::string by;
    for (const auto& installer : (*entry.details)["installers"]) {
        by += (by.empty() ? "" : ", ") + installer.get<std::string>();
    }
    (*entry.details)["note"] = by.empty() ? std::string("not by venvtx") : "not by venvtx: " + by;
    entry.message = "changed outside venvtx" + (by.empty() ? std::string() : " (installer: " + by + ")");
    check.outside = history.record(entry);
    return check;
}

} // namespace venvtx
