// venvtx run -- CMD [ARGS...]
#include "command.hpp"

#include "venvtx/txn/command.hpp"

#include <memory>

namespace venvtx::cli {

namespace {

struct RunFlags {
    bool copy = false;
    std::string capture = "auto";
    MutationFlags mutation;
};

} // namespace

Command register_run(CLI::App& parent) {
    auto flags = std::make_shared<RunFlags>();
    CLI::App* app = parent.add_subcommand(
        "run", "run any command that mutates the venv (after --), with VIRTUAL_ENV and PATH set, as one transaction");
    app->add_option("--capture", flags->capture,
                    "auto (touch where the kernel allows it), touch (keep each file's pre-image the moment "
                    "the command first changes it) or link (hard-link every file beforehand)");
    app->add_flag("--copy", flags->copy, "with link capture: copy files up to 1 MiB beforehand, so in-place edits can be undone too");
    flags->mutation.add_to(*app);
    return {app, [flags](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                CommandOptions options{"run", global.passthrough, flags->copy, flags->capture, flags->mutation.resolve()};
                return finish(out, run_command_transaction(context, options));
            }};
}

} // namespace venvtx::cli
