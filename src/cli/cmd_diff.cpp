// venvtx diff FROM [TO] [--files] [--libs]
#include "command.hpp"

#include "venvtx/ops/history_queries.hpp"
#include "venvtx/report/state_text.hpp"

#include <memory>

namespace venvtx::cli {

namespace {

struct DiffOptions {
    std::string from;
    std::string to = "now";
    bool files = false;
    bool libs = false;
};

} // namespace

Command register_diff(CLI::App& parent) {
    auto options = std::make_shared<DiffOptions>();
    CLI::App* app = parent.add_subcommand("diff", "what differs between two points of the venv's history");
    app->add_option("from", options->from,
                    "a point: N (after entry N), N^ (before it), 0 (before the first), @TIME (UTC: "
                    "@2026-11-30T14:00, @-2h), or now")
        ->required();
    app->add_option("to", options->to, "a point (default: now)");
    app->add_flag("--files", options->files, "each RECORD-listed file that differs: + added, - removed, M changed");
    app->add_flag("--libs", options->libs,
                  "the shared libraries each point provides that the other does not (-v: all of them when the same)");
    return {app, [options](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                PointDiff result = diff_points(context, options->from, options->to, options->files, options->libs);
                if (out.json()) {
                    out.document(state_diff_json(result.from, result.to, result.diff, options->files, options->libs));
                    return 0;
                }
                std::string text = "from " + result.from.text + " (state " + short_state_id(result.from.state) +
                                   ") to " + result.to.text + " (state " + short_state_id(result.to.state) + "):";
                std::vector<std::string> lines = dist_diff_lines(result.diff);
                if (options->libs) {
                    auto libs = library_diff_lines(result.diff, out.verbose());
                    lines.insert(lines.end(), libs.begin(), libs.end());
                }
                if (options->files) {
                    auto files = file_flag_lines(result.diff);
                    lines.insert(lines.end(), files.begin(), files.end());
                }
                for (const auto& line : lines) {
                    text += "\n  " + line;
                }
                out.verdict(text);
                return 0;
            }};
}

} // namespace venvtx::cli
