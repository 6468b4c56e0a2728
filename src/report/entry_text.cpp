// recorded_entry_details and entry_origin_lines.
#include "venvtx/report/entry_text.hpp"

#include "venvtx/state/venv_state.hpp"

namespace venvtx {

namespace {

std::string text_or(const nlohmann::json& json, const char* key, const std::string& fallback) {
    return json.contains(key) && json[key].is_string() ? json[key].get<std::string>() : fallback;
}

std::string outside_lines(const nlohmann::json& details) {
    std::string text;
    if (details.contains("window")) {
        text += "  window   between " + text_or(details["window"], "from", "?") + " and " +
                text_or(details["window"], "to", "?") + "\n";
    }
    for (const auto& dist : details.value("dists", nlohmann::json::array())) {
        const auto& before = dist["before"];
        const auto& after = dist["after"];
        std::string line = "    " + dist.value("name", std::string()) + " " +
                           (before.is_object() ? text_or(before, "version", "?") : "∅") + " → " +
                           (after.is_object() ? text_or(after, "version", "?") : "∅");
        if (after.is_object() && !text_or(after, "installer", "").empty()) {
            line += " (installer " + text_or(after, "installer", "") + ")";
        }
        if (after.is_object() && after.contains("written_at")) {
            line += ", written " + text_or(after, "written_at", "?");
        }
        text += line + "\n";
    }
    return text;
}

std::string exec_lines(const nlohmann::json& details) {
    std::string text = "  command  ";
    for (const auto& arg : details.value("command", nlohmann::json::array())) {
        text += arg.get<std::string>() + " ";
    }
    text += "\n  exit     " + std::to_string(details.value("exit_status", -1)) + "\n";
    if (details.value("venv_changed", false)) {
        text += "  changed  the venv changed while it ran (recorded by the next command)\n";
    }
    text += std::string("  loaded   the venv's files its processes mapped") +
            (details.value("traced", true) ? "" : " (sampled: ptrace was refused, a short-lived process may be missed)") +
            ":\n";
    for (const auto& dist : details.value("dists", nlohmann::json::array())) {
        text += "    " + dist.value("name", std::string()) + " " + dist.value("version", std::string()) + ":";
        for (const auto& file : dist.value("files", nlohmann::json::array())) {
            std::string path = file.get<std::string>();
            text += " " + path.substr(path.rfind('/') + 1);
        }
        text += "\n";
    }
    for (const auto& file : details.value("unowned", nlohmann::json::array())) {
        text += "    (no RECORD lists it) " + file.get<std::string>() + "\n";
    }
    return text;
}

} // namespace

std::string entry_origin_lines(const TransactionRecord& record) {
    std::string text = "  by       " + (record.user.empty() ? std::string("?") : record.user + "@" + record.host) +
                       (record.venvtx_version.empty() ? "" : ", venvtx " + record.venvtx_version) + "\n";
    if (record.state_before || record.state_after) {
        text += "  state    " + (record.state_before ? short_state_id(*record.state_before) : std::string("?")) +
                " → " + (record.state_after ? short_state_id(*record.state_after) : std::string("?")) + "\n";
    }
    return text;
}

std::string recorded_entry_details(const TransactionRecord& record) {
    nlohmann::json details = record.details.value_or(nlohmann::json::object());
    std::string text = std::to_string(record.id) + ": " +
                       (record.kind == "outside" ? std::string("changed outside venvtx")
                        : record.kind == "exec"  ? std::string("tracked run")
                                                 : std::string("stamp")) +
                       "\n  at       " + record.started_at +
                       (record.finished_at && *record.finished_at != record.started_at ? " … " + *record.finished_at : "") +
                       "\n" + entry_origin_lines(record);
    if (record.kind == "outside") {
        text += outside_lines(details);
    } else if (record.kind == "exec") {
        text += exec_lines(details);
    } else if (record.message) {
        text += "  comment  " + *record.message + "\n";
    }
    return text;
}

} // namespace venvtx
