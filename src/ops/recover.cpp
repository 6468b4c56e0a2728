// `venvtx recover`, as a command: the store and its lock, recovery, the recovered transactions.
#include "venvtx/ops/recover.hpp"

#include "venvtx/report/transaction_text.hpp"
#include "venvtx/state/venv_binding.hpp"
#include "venvtx/store/lock.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/txn/recover.hpp"

namespace venvtx {

Outcome recover(const Context& context, std::optional<double> wait_s) {
    Outcome outcome;
    outcome.document_printed = context.out.json();
    if (!Store::exists(context.store_root)) {
        context.out.say("nothing to recover: no venvtx history");
        if (context.out.json()) {
            context.out.document(nlohmann::json({{"recovered", nlohmann::json::array()}}));
        }
        return outcome;
    }
    Store store(context.store_root, true);
    store.require_writable();
    bind_store(store, context.layout);
    MutationLock lock(context.store_root, context.layout.root, wait_s);
    std::vector<std::int64_t> recovered = recover_interrupted(context, store);
    nlohmann::json transactions = nlohmann::json::array();
    for (std::int64_t id : recovered) {
        transactions.push_back(transaction_json(*store.history().find(id)));
    }
    if (context.out.json()) {
        context.out.document(nlohmann::json({{"recovered", transactions}}));
    }
    if (recovered.empty()) {
        context.out.say("nothing to recover");
    }
    return outcome;
}

} // namespace venvtx
