// venvtx watch [--quiet-for SECONDS]
#include "command.hpp"

#include "venvtx/ops/watch.hpp"

#include <memory>

namespace venvtx::cli {

Command register_watch(CLI::App& parent) {
    auto options = std::make_shared<WatchOptions>();
    CLI::App* app = parent.add_subcommand(
        "watch", "record each change made outside venvtx (plain pip or uv) as it happens, its files held");
    app->add_option("--quiet-for", options->quiet_s,
                    "seconds the venv must be still before a change is recorded (default 1)");
    return {app, [options](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                return watch(context, *options);
            }};
}

} // namespace venvtx::cli
