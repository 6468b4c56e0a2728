// venvtx stamp [--comment TEXT]
#include "command.hpp"

#include "venvtx/ops/history_queries.hpp"
#include "venvtx/report/transaction_text.hpp"
#include "venvtx/state/venv_state.hpp"

#include <memory>

namespace venvtx::cli {

Command register_stamp(CLI::App& parent) {
    auto comment = std::make_shared<std::optional<std::string>>();
    CLI::App* app = parent.add_subcommand("stamp", "record the venv's state now as a point of its history");
    app->add_option("--comment", *comment, "what this point is (shown by `venvtx log`)");
    return {app, [comment](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                TransactionRecord entry = stamp(context, *comment);
                if (out.json()) {
                    out.document({{"transaction", transaction_json(entry)}});
                } else {
                    out.verdict("stamp " + std::to_string(entry.id) + ": state " +
                                short_state_id(entry.state_after.value_or("")));
                }
                return 0;
            }};
}

} // namespace venvtx::cli
