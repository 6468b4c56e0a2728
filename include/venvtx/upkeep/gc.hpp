// upkeep/ keeps the store in shape: gc and retention, packing, verify.
//
// `venvtx gc`: prune the history beyond the retention policy (store/retention.hpp), delete the
// objects only pruned transactions referred to, and collect trash/, the staging of pruned
// transactions, preview leftovers and object files the index does not list. Also run, quietly,
// after every commit when the policy is automatic (each operation asks for it: retain_after).
#pragma once

#include "venvtx/store/retention.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/txn/context.hpp"
#include "venvtx/upkeep/packing.hpp"

#include <cstdint>
#include <optional>

namespace venvtx {

struct GcOptions {
    // Rules for this run; none given: the store's policy. With --set-policy, saved as the policy.
    std::optional<std::int64_t> keep_last;
    std::optional<std::int64_t> older_than_s;
    std::optional<std::uint64_t> max_bytes;
    // Objects only transactions older than the newest this-many need are packed (upkeep/packing.hpp).
    std::int64_t loose_last = k_default_loose_last;
    std::optional<bool> automatic;
    bool set_policy = false;
    bool dry_run = false;
    std::optional<double> wait_s = 0.0;
};

Outcome collect_garbage(const Context& context, const GcOptions& options);

// After a commit: applies the store's policy when it is automatic and something is beyond it.
// Never fails the commit: a problem is said and left for `venvtx gc`.
void collect_after_commit(const Context& context, Store& store);
// What every operation that commits runs once the engine returns: collect_after_commit when
// `outcome` committed its transaction. Returns `outcome`.
Outcome retain_after(const Context& context, Store& store, Outcome outcome);

// "keep the last 20 transactions and everything from the last 30 days, at most 20.0 GB of
// stored files; applied after every commit"
std::string describe_policy(const RetentionPolicy& policy);

// "store: 1.2 GB in 345 object(s), 300 of them packed (400 MB in 3 packs); policy: ..." (the
// footer of `venvtx log`).
std::string describe_store(Store& store);

} // namespace venvtx
