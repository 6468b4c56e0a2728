// venvtx remove PATTERN...
#include "command.hpp"

#include "venvtx/txn/remove.hpp"

#include <memory>

namespace venvtx::cli {

namespace {

struct RemoveFlags {
    std::vector<std::string> patterns;
    MutationFlags mutation;
    bool keep_going = false;
};

} // namespace

Command register_remove(CLI::App& parent) {
    auto flags = std::make_shared<RemoveFlags>();
    CLI::App* app = parent.add_subcommand(
        "remove", "uninstall every distribution whose normalized name matches a shell glob");
    app->add_option("pattern", flags->patterns, "name or glob, e.g. 'nvidia-*-cu13'")->required();
    flags->mutation.add_to(*app);
    app->add_flag("--keep-going", flags->keep_going,
                  "if the probe fails, commit the largest subset whose removal passes");
    return {app, [flags](const GlobalOptions& global) {
                Output out = make_output(global);
                RemoveOptions options{flags->patterns, flags->mutation.resolve(), flags->keep_going};
                Context context = make_context(global, out);
                return finish(out, remove_distributions(context, options));
            }};
}

} // namespace venvtx::cli
