// venvtx rollback [--to TX]
#include "command.hpp"

#include "venvtx/ops/rollback.hpp"

#include <memory>

namespace venvtx::cli {

namespace {

struct RollbackFlags {
    std::optional<std::int64_t> to;
    bool redo = false;
    MutationFlags mutation;
};

} // namespace

Command register_rollback(CLI::App& parent) {
    auto flags = std::make_shared<RollbackFlags>();
    CLI::App* app = parent.add_subcommand(
        "rollback", "undo the newest transaction not yet undone (or every one after --to TX)");
    auto* to = app->add_option("--to", flags->to, "undo every transaction after TX")->check(k_transaction_id);
    app->add_flag("--redo", flags->redo, "undo the newest rollback (redo what it undid)")->excludes(to);
    flags->mutation.add_to(*app);
    return {app, [flags](const GlobalOptions& global) {
                Output out = make_output(global);
                RollbackOptions options{flags->to, flags->redo, flags->mutation.resolve()};
                Context context = make_context(global, out);
                return finish(out, rollback(context, options));
            }};
}

} // namespace venvtx::cli
