// venvtx run -- CMD [ARGS...]
#include "command.hpp"

#include "venvtx/ops/command.hpp"

#include <memory>

namespace venvtx::cli {

namespace {

struct RunFlags {
    CaptureFlags capture;
    MutationFlags mutation;
    PreviewFlags preview;
};

} // namespace

Command register_run(CLI::App& parent) {
    auto flags = std::make_shared<RunFlags>();
    CLI::App* app = parent.add_subcommand(
        "run", "run any command that mutates the venv (after --), with VIRTUAL_ENV and PATH set, as one transaction "
        "(its stdin is /dev/null: pass answers as flags, e.g. pip's -y)");
    flags->capture.add_to(*app);
    flags->mutation.add_to(*app, {"run it in a private view and say which distributions it would change "
                                  "(and, with a probe, whether the probe would pass); nothing is applied",
                                  "let it change the venvtx running now, when it was installed in this venv"});
    flags->preview.add_to(*app);
    return {app, [flags](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                say_venv(out, context);
                SavedDefaults saved = saved_defaults(context);
                CommandOptions options{"run", global.passthrough, flags->capture.copy, capture_mode_from(flags->capture.capture), {},
                                       flags->mutation.resolve(saved, context.layout)};
                flags->preview.apply_to(options.mutation, saved);
                return finish(out, run_command_transaction(context, options));
            }};
}

} // namespace venvtx::cli
