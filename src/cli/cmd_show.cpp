// venvtx show TX
#include "command.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/txn/report.hpp"

#include <memory>

namespace venvtx::cli {

Command register_show(CLI::App& parent) {
    auto id = std::make_shared<std::int64_t>(0);
    CLI::App* app = parent.add_subcommand("show", "one transaction: packages, files, probe report");
    app->add_option("tx", *id, "transaction id (see `venvtx log`)")->required()->check(k_transaction_id);
    return {app, [id](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                if (!Store::exists(context.store_root)) {
                    throw usage_error("no transaction " + std::to_string(*id) + ": no venvtx history yet");
                }
                Store store(context.store_root, false);
                auto record = store.history().find(*id);
                if (!record) {
                    throw usage_error("no transaction " + std::to_string(*id));
                }
                std::vector<Entry> entries = store.history().entries(*id);
                if (out.json()) {
                    nlohmann::json json = transaction_json(*record);
                    json["paths"] = nlohmann::json::array();
                    for (const auto& entry : entries) {
                        json["paths"].push_back({{"path", entry.path},
                                                 {"before", node_type_name(entry.before.type)},
                                                 {"after", node_type_name(entry.after.type)}});
                    }
                    out.document(json.dump(2));
                } else {
                    out.verdict(transaction_details(*record, entries));
                }
                return 0;
            }};
}

} // namespace venvtx::cli
