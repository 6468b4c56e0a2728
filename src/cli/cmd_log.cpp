// venvtx log [-n N]
#include "command.hpp"

#include "venvtx/ops/history_session.hpp"
#include "venvtx/report/transaction_text.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/store/transaction_lines.hpp"
#include "venvtx/upkeep/gc.hpp"

#include <memory>

namespace venvtx::cli {

Command register_log(CLI::App& parent) {
    auto limit = std::make_shared<std::optional<std::int64_t>>();
    CLI::App* app = parent.add_subcommand("log", "the venv's history, newest first: transactions, changes made outside venvtx (>), stamps, runs");
    app->add_option("-n", *limit, "show at most N transactions")->check(k_how_many);
    return {app, [limit](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                HistorySession session(context, false); // records a change made outside venvtx first
                Store* store = session.has_store() ? &session.store() : nullptr;
                if (out.json()) {
                    nlohmann::json list = nlohmann::json::array();
                    for (const auto& record : store ? store->history().list(*limit)
                                                    : std::vector<TransactionRecord>()) {
                        list.push_back(transaction_json(record));
                    }
                    out.document({{"transactions", list}});
                    return 0;
                }
                std::string lines; // one write for the whole list, not one per transaction
                for (const auto& tx : store ? transaction_lines(store->db(), *limit) : std::vector<TransactionLine>()) {
                    lines += (lines.empty() ? "" : "\n") + transaction_line(tx);
                }
                if (lines.empty()) {
                    out.say("no transactions yet");
                } else {
                    out.verdict(lines);
                }
                if (store && out.verbose()) {
                    out.say(describe_store(*store));
                }
                return 0;
            }};
}

} // namespace venvtx::cli
