// venvtx status [--exit-code]
#include "command.hpp"

#include "venvtx/ops/history_queries.hpp"
#include "venvtx/report/state_text.hpp"

#include <memory>

namespace venvtx::cli {

Command register_status(CLI::App& parent) {
    auto exit_code = std::make_shared<bool>(false);
    CLI::App* app = parent.add_subcommand(
        "status", "what differs from the venv's last recorded state (a change made outside venvtx)");
    app->add_flag("--exit-code", *exit_code, "exit 1 when anything differs");
    return {app, [exit_code](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                StatusReport report = venv_status(context);
                bool differs = !report.last_state || *report.last_state != report.now.id;
                if (out.json()) {
                    nlohmann::json json = state_diff_json({"last", report.last_state.value_or(""), std::nullopt},
                                                          {"now", report.now.id, std::nullopt}, report.diff, false,
                                                          false);
                    json["changed"] = differs;
                    json["last_recorded_at"] = report.last_recorded_at ? nlohmann::json(*report.last_recorded_at) : nlohmann::json();
                    out.document(json);
                } else if (!report.last_state) {
                    out.verdict("no state recorded yet: state now " + short_state_id(report.now.id));
                } else if (!differs) {
                    out.verdict("unchanged since " + report.last_recorded_at.value_or("the last command") + ": state " +
                                short_state_id(report.now.id));
                } else {
                    std::string text = "changed outside venvtx since " + report.last_recorded_at.value_or("the last command") +
                                       " (the next venvtx command records it):";
                    for (const auto& line : dist_diff_lines(report.diff)) {
                        text += "\n  " + line;
                    }
                    out.verdict(text);
                }
                return differs && *exit_code ? 1 : 0;
            }};
}

} // namespace venvtx::cli
