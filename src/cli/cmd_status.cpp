// venvtx status [--files] [--untracked] [--exit-code]
#include "command.hpp"

#include "venvtx/ops/history_queries.hpp"
#include "venvtx/report/state_text.hpp"

#include <memory>

namespace venvtx::cli {

namespace {

struct StatusFlags {
    bool files = false;
    bool untracked = false;
    bool exit_code = false;
};

// Whether a change made outside venvtx now could be rolled back, never more than is held.
std::string held_text(const StatusReport& report) {
    if (!report.holds_unavailable.empty()) {
        return "not held: " + report.holds_unavailable + ", so a plain pip or uv change cannot be rolled back";
    }
    std::string text = std::string(report.holds_copied ? "held as copies" : "held") + ": the files of " +
                       (report.held_dists == static_cast<std::int64_t>(report.now.dists.size())
                            ? "all " + std::to_string(report.held_dists)
                            : std::to_string(report.held_dists) + " of " + std::to_string(report.now.dists.size())) +
                       " distributions";
    if (report.unheld_files > 0) {
        text += ", but for " + counted(report.unheld_files, "file");
    }
    std::int64_t left = static_cast<std::int64_t>(report.now.dists.size()) - report.held_dists;
    if (report.held_dists == 0) {
        return text + ": a plain pip or uv change cannot be rolled back yet (`venvtx stamp` holds them)";
    }
    return text + " (a plain pip or uv change to them can be rolled back" +
           (left > 0 ? "; `venvtx stamp` holds the other " + std::to_string(left) + ")" : ")");
}

} // namespace

Command register_status(CLI::App& parent) {
    auto flags = std::make_shared<StatusFlags>();
    CLI::App* app = parent.add_subcommand(
        "status", "what differs from the venv's last recorded state (a change made outside venvtx)");
    app->add_flag("--files", flags->files, "also each RECORD-listed file that is not as RECORD says");
    app->add_flag("--untracked", flags->untracked, "also each file in site-packages that no RECORD lists");
    app->add_flag("--exit-code", flags->exit_code, "exit 1 when anything differs");
    return {app, [flags](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                StatusReport report = venv_status(context, flags->files, flags->untracked);
                bool changed = !report.last_state || *report.last_state != report.now.id;
                bool differs = changed || !report.files.empty();
                if (out.json()) {
                    nlohmann::json json = state_diff_json({"last", report.last_state.value_or(""), std::nullopt},
                                                          {"now", report.now.id, std::nullopt}, report.diff, false,
                                                          false);
                    json["changed"] = changed;
                    json["last_recorded_at"] = report.last_recorded_at ? nlohmann::json(*report.last_recorded_at) : nlohmann::json();
                    json["held"] = {{"dists", report.held_dists},
                                    {"copies", report.holds_copied},
                                    {"of", report.now.dists.size()},
                                    {"unheld_files", report.unheld_files},
                                    {"unavailable", report.holds_unavailable.empty()
                                                        ? nlohmann::json()
                                                        : nlohmann::json(report.holds_unavailable)}};
                    if (flags->files || flags->untracked) {
                        json["files"] = nlohmann::json::array();
                        for (const auto& file : report.files) {
                            json["files"].push_back({{"what", file.what}, {"path", file.path}, {"dist", file.dist}});
                        }
                    }
                    out.document(json);
                    return differs && flags->exit_code ? 1 : 0;
                }
                std::string text;
                if (!report.last_state) {
                    text = "no state recorded yet: state now " + short_state_id(report.now.id);
                } else if (!changed && !flags->files) { // the dist-infos were compared, not the files
                    text = "no distribution changed since " + report.last_recorded_at.value_or("the last command") +
                           ": state " + short_state_id(report.now.id) +
                           " (file contents not checked: `venvtx status --files`, `venvtx verify`)";
                } else if (!changed) {
                    text = "unchanged since " + report.last_recorded_at.value_or("the last command") + ": state " +
                           short_state_id(report.now.id);
                } else {
                    text = "changed outside venvtx since " + report.last_recorded_at.value_or("the last command") +
                           " (the next venvtx command records it):";
                    for (const auto& line : dist_diff_lines(report.diff)) {
                        text += "\n  " + line;
                    }
                }
                text += "\n" + held_text(report);
                for (const auto& file : report.files) {
                    text += "\n  " + file.what + ": " + file.path + (file.dist.empty() ? "" : " (" + file.dist + ")");
                }
                out.verdict(text);
                return differs && flags->exit_code ? 1 : 0;
            }};
}

} // namespace venvtx::cli
