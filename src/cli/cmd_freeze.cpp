// venvtx freeze [--at POINT]
#include "command.hpp"

#include "venvtx/ops/history_queries.hpp"
#include "venvtx/report/state_text.hpp"

#include <memory>

namespace venvtx::cli {

Command register_freeze(CLI::App& parent) {
    auto point = std::make_shared<std::string>("now");
    CLI::App* app = parent.add_subcommand(
        "freeze", "the distributions at a point of the venv's history, as `pip freeze --all` prints them");
    app->add_option("--at", *point, "a point: N, N^, 0, @TIME or now (default), as for `venvtx diff`");
    return {app, [point](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                auto [resolved, state] = state_at(context, *point);
                if (out.json()) {
                    out.document({{"point", resolved.text}, {"state", state.id}, {"dists", dists_json(state.dists)}});
                    return 0;
                }
                std::string text;
                for (const auto& line : freeze_lines(state)) {
                    text += (text.empty() ? "" : "\n") + line;
                }
                if (!text.empty()) {
                    out.verdict(text);
                }
                return 0;
            }};
}

} // namespace venvtx::cli
