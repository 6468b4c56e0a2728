// venvtx sync --to POINT [-- INSTALLER-ARGS]
#include "command.hpp"

#include "venvtx/ops/sync.hpp"

#include <memory>

namespace venvtx::cli {

namespace {

struct SyncFlags {
    std::string point;
    std::string installer = "auto";
    CaptureFlags capture;
    MutationFlags mutation;
    PreviewFlags preview;
};

} // namespace

Command register_sync(CLI::App& parent) {
    auto flags = std::make_shared<SyncFlags>();
    CLI::App* app = parent.add_subcommand(
        "sync", "put the venv in a point's versions through its installer (uninstall what the point lacks, install "
                "its exact versions), as one transaction: for a point whose files venvtx does not hold");
    app->add_option("--to", flags->point, "a point: N, N^, 0 or @TIME, as for `venvtx diff`")->required();
    app->add_option("--installer", flags->installer, "auto (uv when on PATH, else pip), pip or uv");
    flags->capture.add_to(*app);
    flags->mutation.add_to(*app, {"say what it would uninstall and install, before -> after; with a probe, sync in a "
                                  "private view and probe there (a what-if)",
                                  "let it change the venvtx running now, when it was installed in this venv"});
    flags->preview.add_to(*app);
    return {app, [flags](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                say_venv(out, context);
                SavedDefaults saved = saved_defaults(context);
                SyncOptions options{flags->point, installer_from(flags->installer),
                                    capture_mode_from(flags->capture.capture), flags->capture.copy, global.passthrough,
                                    flags->mutation.resolve(saved, context.layout)};
                flags->preview.apply_to(options.mutation, saved);
                return finish(out, sync_to(context, options));
            }};
}

} // namespace venvtx::cli
