// venvtx remove PATTERN...
#include "command.hpp"

#include "venvtx/ops/remove.hpp"

#include <memory>

namespace venvtx::cli {

namespace {

struct RemoveFlags {
    std::vector<std::string> patterns;
    MutationFlags mutation;
    PreviewFlags preview;
    bool keep_going = false;
    std::size_t jobs = 0;
    bool no_system_fallback = false;
    bool strict = false;
};

} // namespace

Command register_remove(CLI::App& parent) {
    auto flags = std::make_shared<RemoveFlags>();
    CLI::App* app = parent.add_subcommand(
        "remove", "uninstall every distribution whose normalized name matches a shell glob");
    app->add_option("pattern", flags->patterns, "name or glob, e.g. 'nvidia-*-cu13'")->required();
    flags->mutation.add_to(*app, {"say what it would remove and which shared libraries would lose their last "
                                  "provider; with a probe, remove in a private view and probe there (a what-if)",
                                  "remove the venv's installer (pip), or the venvtx running now (installed in this venv), too"});
    flags->preview.add_to(*app);
    app->add_flag("--keep-going", flags->keep_going,
                  "if the probe fails, commit the largest subset whose removal passes (exact for up to 8 "
                  "distributions that interact)");
    app->add_option("--jobs", flags->jobs, "--keep-going: candidate subsets previewed side by side (default 4)")
        ->check(k_jobs);
    app->add_flag("--no-system-fallback", flags->no_system_fallback,
                  "--keep-going: keep a distribution whose libraries would otherwise come from a system copy");
    app->add_flag("--strict", flags->strict,
                  "a pattern that matches nothing is an error (by default it is skipped with a warning when "
                  "another pattern matched, as pip skips what is not installed)");
    return {app, [flags](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                say_venv(out, context);
                SavedDefaults saved = saved_defaults(context);
                RemoveOptions options{flags->patterns, flags->mutation.resolve(saved, context.layout), flags->keep_going, flags->jobs,
                                      flags->no_system_fallback, flags->strict};
                flags->preview.apply_to(options.mutation, saved);
                return finish(out, remove_distributions(context, options));
            }};
}

} // namespace venvtx::cli
