// remove_distributions: plan, show the plan, then run it as a transaction.
#include "venvtx/txn/remove.hpp"

#include "venvtx/txn/engine.hpp"
#include "venvtx/txn/recover.hpp"
#include "venvtx/txn/report.hpp"
#include "venvtx/venv/inventory.hpp"
#include "venvtx/venv/removal_plan.hpp"

namespace venvtx {

namespace {

TransactionPlan to_transaction(const RemovalPlan& removal) {
    TransactionPlan plan;
    plan.kind = "remove";
    for (const Distribution* dist : removal.targets) {
        plan.packages.push_back({dist->name, dist->version, std::nullopt});
    }
    for (const auto& group : {&removal.files, &removal.dirs}) {
        for (const auto& planned : *group) {
            Entry entry;
            entry.path = planned.path;
            entry.before = planned.state;
            entry.owner = planned.owner;
            plan.entries.push_back(std::move(entry));
        }
    }
    return plan;
}

} // namespace

Outcome remove_distributions(const Context& context, const RemoveOptions& options) {
    if (options.mutation.dry_run) {
        std::vector<Distribution> inventory = scan_inventory(context.layout);
        say_removal_plan(context.out,
                         plan_removal(context.layout, inventory, options.patterns, context.store_root));
        context.out.say("dry run: nothing changed");
        return {};
    }
    // Plan under the locks: another venvtx (or uv) may change the venv until we hold them.
    Store store(context.store_root, true);
    MutationLock lock(context.store_root, context.layout.root, options.mutation.wait_s);
    recover_before_mutating(context, store);
    std::vector<Distribution> inventory = scan_inventory(context.layout);
    RemovalPlan removal = plan_removal(context.layout, inventory, options.patterns, context.store_root);
    say_removal_plan(context.out, removal);
    return run_transaction(context, options.mutation, store, to_transaction(removal));
}

} // namespace venvtx
