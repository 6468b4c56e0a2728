// recorded_entry_details and entry_origin_lines.
#include "venvtx/report/entry_text.hpp"

#include "venvtx/state/venv_state.hpp"

#include <set>

namespace venvtx {

std::string shell_command(const nlohmann::json& argv) {
    // As a shell would need each argument typed: bare when safe, else in single quotes.
    const char* safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-";
    std::string text;
    for (const auto& item : argv) {
        std::string arg = item.get<std::string>();
        text += text.empty() ? "" : " ";
        if (!arg.empty() && arg.find_first_not_of(safe) == std::string::npos) {
            text += arg;
            continue;
        }
        text += "'";
        for (char c : arg) {
            text += c == '\'' ? std::string("'\\''") : std::string(1, c);
        }
        text += "'";
    }
    return text;
}

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
    std::string text = "  command  " + shell_command(details.value("command", nlohmann::json::array()));
    text += "\n  exit     " + std::to_string(details.value("exit_status", -1)) + "\n";
    if (details.value("venv_changed", false)) {
        text += "  changed  the venv changed while it ran (recorded by the next command)\n";
    }
    text += std::string("  loaded   the venv's files its processes mapped") +
            (details.value("traced", true) ? "" : " (sampled, not traced: a short-lived process may be missed)") +
            ":\n";
    for (const auto& dist : details.value("dists", nlohmann::json::array())) {
        text += "    " + dist.value("name", std::string()) + " " + dist.value("version", std::string()) + ":";
        for (const auto& file : dist.value("files", nlohmann::json::array())) {
            std::string path = file.get<std::string>();
            text.append(" ").append(path, path.rfind('/') + 1); // its name (npos + 1: all of it)
        }
        text += "\n";
    }
    for (const auto& file : details.value("unowned", nlohmann::json::array())) {
        text += "    (no RECORD lists it) " + file.get<std::string>() + "\n";
    }
    return text;
}

std::string state_line(const TransactionRecord& record) {
    if (!record.state_before && !record.state_after) {
        return "";
    }
    return "  state    " + (record.state_before ? short_state_id(*record.state_before) : std::string("?")) + " → " +
           (record.state_after ? short_state_id(*record.state_after) : std::string("?")) + "\n";
}

// "changed outside venvtx (by pip, ...)": the installers the new versions name, when they say.
std::string outside_title(const nlohmann::json& details) {
    std::set<std::string> installers;
    for (const auto& dist : details.value("dists", nlohmann::json::array())) {
        if (dist["after"].is_object() && !text_or(dist["after"], "installer", "").empty()) {
            installers.insert(text_or(dist["after"], "installer", ""));
        }
    }
    std::string title = "changed outside venvtx";
    for (const auto& installer : installers) {
        title.append(installer == *installers.begin() ? " (by " : ", ").append(installer);
    }
    return installers.empty() ? title : title.append(", as INSTALLER says)");
}

// Made within its window by someone else; venvtx detected it at the window's end.
std::string outside_origin_lines(const TransactionRecord& record) {
    std::string text = "  detected ";
    text.append(record.finished_at.value_or(record.started_at)).append(" by venvtx ").append(record.venvtx_version);
    text.append(" (").append(record.user.empty() ? "?" : record.user + "@" + record.host).append(")\n");
    return text + state_line(record);
}

} // namespace

std::string entry_origin_lines(const TransactionRecord& record) {
    return "  by       " + (record.user.empty() ? std::string("?") : record.user + "@" + record.host) +
           (record.venvtx_version.empty() ? "" : ", venvtx " + record.venvtx_version) + "\n" + state_line(record);
}

std::string recorded_entry_details(const TransactionRecord& record) {
    nlohmann::json details = record.details.value_or(nlohmann::json::object());
    if (record.kind == "outside") {
        return std::to_string(record.id) + ": " + outside_title(details) + "\n" + outside_origin_lines(record) +
               outside_lines(details);
    }
    std::string text = std::to_string(record.id) + ": " +
                       (record.kind == "exec" ? std::string("tracked run") : std::string("stamp")) +
                       "\n  at       " + record.started_at +
                       (record.finished_at && *record.finished_at != record.started_at ? " … " + *record.finished_at : "") +
                       "\n" + entry_origin_lines(record);
    if (record.kind == "exec") {
        text += exec_lines(details);
    } else if (record.message) {
        text += "  comment  " + *record.message + "\n";
    }
    return text;
}

} // namespace venvtx
