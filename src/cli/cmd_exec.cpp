// venvtx exec [--sample S] [--no-trace] [--record-to FILE] -- CMD [ARGS...]
#include "command.hpp"

#include "venvtx/ops/exec_run.hpp"

#include <memory>

namespace venvtx::cli {

Command register_exec(CLI::App& parent) {
    auto options = std::make_shared<ExecOptions>();
    CLI::App* app = parent.add_subcommand(
        "exec", "run a job in the venv (exec -- CMD [ARGS...]; its bin/ first on PATH, VIRTUAL_ENV set); record "
                "the state it ran in and the libraries it loaded");
    app->add_option("--sample", options->sample_s, "seconds between reads of its processes' maps (default 1)")
        ->check(k_timeout);
    app->add_flag("!--no-trace", options->trace,
                  "never ptrace the job, only sample its maps (a job that runs strace, gdb or py-spy is only "
                  "sampled anyway)");
    app->add_option("--record-to", options->record_to,
                    "once the run is recorded, write {\"entry\": its id, \"exit_status\": ...} as JSON to FILE "
                    "(the job keeps stdout and stderr)");
    return {app, [options](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                options->argv = global.passthrough;
                return exec_tracked(context, *options);
            }};
}

} // namespace venvtx::cli
