// venvtx rollback [TX | --to N | --redo]
#include "command.hpp"

#include "venvtx/ops/rollback.hpp"

#include <memory>

namespace venvtx::cli {

namespace {

struct RollbackFlags {
    std::optional<std::int64_t> tx;
    std::optional<std::int64_t> to;
    bool redo = false;
    MutationFlags mutation;
    PreviewFlags preview;
};

} // namespace

Command register_rollback(CLI::App& parent) {
    auto flags = std::make_shared<RollbackFlags>();
    CLI::App* app = parent.add_subcommand(
        "rollback", "undo the newest transaction not yet undone (or TX alone, or every one after --to N)");
    auto* tx = app->add_option("tx", flags->tx, "undo this transaction alone, when nothing it touched changed since")
                   ->check(k_transaction_id);
    auto* to = app->add_option("--to", flags->to,
                               "undo every transaction after entry N (0: all of them) as one transaction")
                   ->check(k_entry_id)
                   ->excludes(tx);
    app->add_flag("--redo", flags->redo, "undo the newest rollback (redo what it undid)")->excludes(to)->excludes(tx);
    flags->mutation.add_to(*app, {"say which transactions it would undo, the packages before -> after, the paths "
                                  "it would restore, and whether drift would refuse it (exit 6)",
                                  "undo even over files changed since (drift), storing them first; or when it changes the "
                                  "venvtx running now"});
    flags->preview.add_to(*app);
    return {app, [flags](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                say_venv(out, context);
                SavedDefaults saved = saved_defaults(context);
                RollbackOptions options{flags->tx, flags->to, flags->redo, flags->mutation.resolve(saved, context.layout)};
                flags->preview.apply_to(options.mutation, saved);
                return finish(out, rollback(context, options));
            }};
}

} // namespace venvtx::cli
