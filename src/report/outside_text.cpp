// outside_summary and outside_json.
#include "venvtx/report/outside_text.hpp"

#include "venvtx/core/output.hpp"

namespace venvtx {

std::string outside_summary(const std::vector<LiveChange>& changes) {
    return counted(changes.size(), "path") + ", e.g. " + changes.front().path + " (" +
           changes.front().change + ")";
}

nlohmann::json outside_json(const std::vector<LiveChange>& changes) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& change : changes) {
        list.push_back({{"path", change.path}, {"change", change.change}});
    }
    return list;
}

} // namespace venvtx
