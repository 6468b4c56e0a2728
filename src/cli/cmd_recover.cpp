// venvtx recover
#include "command.hpp"

#include "venvtx/ops/recover.hpp"

#include <memory>

namespace venvtx::cli {

Command register_recover(CLI::App& parent) {
    auto wait = std::make_shared<std::optional<double>>();
    CLI::App* app = parent.add_subcommand(
        "recover", "finish an interrupted transaction (also done at the start of every mutating command)");
    app->add_option("--wait", *wait, "seconds to wait for the locks (default: exit 5 at once)")
        ->check(k_wait);
    return {app, [wait](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                return finish(out, recover(context, wait->value_or(0.0)));
            }};
}

} // namespace venvtx::cli
