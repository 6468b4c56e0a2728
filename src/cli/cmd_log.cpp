// venvtx log [-n N]
#include "command.hpp"

#include "venvtx/report/transaction_text.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/store/transaction_lines.hpp"
#include "venvtx/upkeep/gc.hpp"

#include <memory>

namespace venvtx::cli {

Command register_log(CLI::App& parent) {
    auto limit = std::make_shared<std::optional<std::int64_t>>();
    CLI::App* app = parent.add_subcommand("log", "transactions, newest first");
    app->add_option("-n", *limit, "show at most N transactions")->check(k_how_many);
    return {app, [limit](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                std::optional<Store> store;
                if (Store::exists(context.store_root)) {
                    store.emplace(context.store_root, false);
                }
                if (out.json()) {
                    nlohmann::json list = nlohmann::json::array();
                    for (const auto& record : store ? store->history().list(*limit)
                                                    : std::vector<TransactionRecord>()) {
                        list.push_back(transaction_json(record));
                    }
                    out.document(list);
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
                if (store) {
                    out.say(describe_store(*store));
                }
                return 0;
            }};
}

} // namespace venvtx::cli
