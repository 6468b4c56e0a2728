// venvtx config [KEY [VALUE...]] [--unset]
#include "command.hpp"

#include "venvtx/ops/config.hpp"

#include <memory>

namespace venvtx::cli {

Command register_config(CLI::App& parent) {
    auto request = std::make_shared<ConfigRequest>();
    auto key = std::make_shared<std::string>();
    CLI::App* app = parent.add_subcommand(
        "config", "defaults kept with the venv's history: probe, gpus, preview, probe-timeout, hold, and the "
                  "retention policy (keep, older-than, max-size, auto-gc); no KEY lists them all");
    app->add_option("key", *key, "probe, gpus, preview, probe-timeout, hold (link, or copy: hold copies where no link can be made), "
                    "keep, older-than, max-size or auto-gc");
    app->add_option("value", request->values, "the value to save (probe takes one or more lines of code)");
    app->add_flag("--unset", request->unset, "forget the saved value (back to the default)");
    return {app, [request, key](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                if (!key->empty()) {
                    request->key = *key;
                }
                configure(context, *request);
                return 0;
            }};
}

} // namespace venvtx::cli
