// venvtx install SPEC... [-- INSTALLER-ARGS]
#include "command.hpp"

#include "venvtx/ops/command.hpp"

#include <memory>

namespace venvtx::cli {

namespace {

struct InstallFlags {
    std::vector<std::string> specs;
    std::string installer = "auto";
    CaptureFlags capture;
    MutationFlags mutation;
    PreviewFlags preview;
};

} // namespace

Command register_install(CLI::App& parent) {
    auto flags = std::make_shared<InstallFlags>();
    CLI::App* app = parent.add_subcommand(
        "install", "install or upgrade through the venv's installer (uv if present, else pip), as one transaction");
    app->add_option("spec", flags->specs, "requirement specifiers; installer arguments go after --");
    app->add_option("--installer", flags->installer, "auto (uv when on PATH, else pip), pip or uv");
    flags->capture.add_to(*app);
    flags->mutation.add_to(
        *app, {"ask the installer what it would change (pip's and uv's own dry runs) and say it, before -> "
               "after; with a probe, install in a private view and probe there (a what-if)",
               "replace the venvtx running now, when it was installed in this venv"});
    flags->preview.add_to(*app);
    return {app, [flags](const GlobalOptions& global) {
                Output out = make_output(global);
                if (flags->specs.empty() && global.passthrough.empty()) {
                    throw usage_error("install needs what to install: venvtx install SPEC... [-- INSTALLER-ARGS], "
                                      "or venvtx install -- -r requirements.txt");
                }
                Context context = make_context(global, out);
                say_venv(out, context);
                SavedDefaults saved = saved_defaults(context);
                CommandOptions options{"install",
                                       installer_command(context.layout, installer_from(flags->installer), flags->specs,
                                                         global.passthrough),
                                       flags->capture.copy, capture_mode_from(flags->capture.capture), flags->specs,
                                       flags->mutation.resolve(saved, context.layout)};
                flags->preview.apply_to(options.mutation, saved);
                return finish(out, run_command_transaction(context, options));
            }};
}

} // namespace venvtx::cli
