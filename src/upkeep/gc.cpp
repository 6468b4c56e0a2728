// collect_garbage: choose the prune point, prune in the index, then delete files.
#include "venvtx/upkeep/gc.hpp"

#include "venvtx/capture/settle.hpp"
#include "venvtx/core/confinement.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/core/sha256.hpp"
#include "venvtx/preview/overlay_view.hpp"
#include "venvtx/state/state_index.hpp"
#include "venvtx/store/holds.hpp"
#include "venvtx/store/doomed_objects.hpp"
#include "venvtx/store/packs.hpp"
#include "venvtx/store/pending_captures.hpp"
#include "venvtx/store/pruning.hpp"
#include "venvtx/txn/mutation_session.hpp"

#include <algorithm>
#include <cerrno>
#include <dirent.h>
#include <map>
#include <set>
#include <sys/stat.h>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

// The objects with the pending captures merged in by content (the same bytes are one object).
std::vector<ObjectUse> with_pending(std::vector<ObjectUse> uses, const std::vector<ObjectUse>& pending) {
    if (pending.empty()) {
        return uses;
    }
    std::map<std::string, std::size_t> by_record_hash;
    for (std::size_t i = 0; i < uses.size(); ++i) {
        by_record_hash[record_hash_from_hex(uses[i].hex)] = i;
    }
    for (const auto& use : pending) {
        auto [at, added] = by_record_hash.try_emplace(use.hex, uses.size());
        if (added) {
            uses.push_back(use);
        } else {
            uses[at->second].newest_tx = std::max(uses[at->second].newest_tx, use.newest_tx);
        }
    }
    return uses;
}

// The newest id to prune through (0: none). Kept: the newest `keep_last` that changed the venv
// (an aborted or restored attempt, a stamp, is not counted) with all after them, and those
// younger than `keep_seconds` (no rule: all); pruned: the longest run of oldest not kept. Then,
// over `max_bytes`, the oldest kept go too, never the newest. `pending`: captures not hashed yet,
// weighed as the objects they become (a dry run; a real run hashes them first).
std::int64_t prune_point(Database& db, const RetentionPolicy& policy, const std::vector<ObjectUse>& pending) {
    std::vector<TransactionAge> ages = transaction_ages(db);
    std::vector<const TransactionAge*> live;
    for (const auto& age : ages) {
        if (!age.pruned) {
            live.push_back(&age);
        }
    }
    std::vector<std::int64_t> counted_from(live.size() + 1, 0); // counted entries at index i or newer
    for (std::size_t i = live.size(); i-- > 0;) {
        counted_from[i] = counted_from[i + 1] + (live[i]->counted ? 1 : 0);
    }
    std::int64_t point = 0;
    for (std::size_t i = 0; i < live.size(); ++i) {
        std::int64_t newer = counted_from[i] - (live[i]->counted ? 1 : 0); // counted ones after it
        bool by_count = policy.keep_last && newer < *policy.keep_last;
        bool by_age = policy.keep_seconds && live[i]->age_s < *policy.keep_seconds;
        bool no_rule = !policy.keep_last && !policy.keep_seconds;
        if (by_count || by_age || no_rule || !live[i]->finished) {
            break;
        }
        point = live[i]->id;
    }
    std::uint64_t pending_bytes = 0;
    for (const auto& use : pending) {
        pending_bytes += use.size;
    }
    if (!policy.max_bytes || live.empty() || store_totals(db).bytes + pending_bytes <= *policy.max_bytes) {
        return point; // the cheap check first: this runs after every commit
    }
    std::vector<ObjectUse> uses = with_pending(object_uses(db), pending);
    auto kept_bytes = [&](std::int64_t through) {
        std::uint64_t bytes = 0;
        for (const auto& use : uses) {
            bytes += use.newest_tx > through ? use.size : 0;
        }
        return bytes;
    };
    for (std::size_t i = 0; i + 1 < live.size() && kept_bytes(point) > *policy.max_bytes; ++i) {
        if (live[i]->id > point) {
            if (!live[i]->finished) {
                break;
            }
            point = live[i]->id;
        }
    }
    return point;
}

std::uint64_t tree_bytes(const stdfs::path& path) {
    std::uint64_t bytes = 0;
    std::error_code ec;
    if (stdfs::is_regular_file(stdfs::symlink_status(path, ec))) {
        return stdfs::file_size(path, ec);
    }
    for (auto it = stdfs::recursive_directory_iterator(path, ec); !ec && it != stdfs::recursive_directory_iterator();
         it.increment(ec)) {
        if (it->is_regular_file(ec) && !it->is_symlink(ec)) {
            bytes += it->file_size(ec);
        }
    }
    return bytes;
}

struct Collected {
    std::vector<std::int64_t> pruned;
    std::vector<std::string> objects;  // deleted (or, dry run, that would be)
    std::uint64_t object_bytes = 0;
    std::uint64_t other_bytes = 0;     // trash, staging of pruned transactions, stray files
    std::vector<std::string> left_pending;  // pending captures not hashed: their staged file changed
    std::int64_t released_holds = 0;         // files held for states nothing reaches now
};

class Collector {
public:
    Collector(Store& store, const RetentionPolicy& policy) : m_store(store), m_policy(policy) {}

    // `full` (`venvtx gc`, not the run after a commit): also what the transactions that stay left
    // unhashed is stored as objects (before pruning: an object they share is not freed), and
    // trash, old staging, preview layers and unlisted object files go.
    Collected run(bool dry_run, bool full) {
        Database& db = m_store.db();
        if (!dry_run && over_size_limit_with_pending()) {
            m_result.left_pending = settle_pending_after(m_store, 0); // the size rule weighs objects
        }
        // Over the size limit, the real run hashes pending captures into objects first.
        bool weigh_pending = dry_run && over_size_limit_with_pending();
        std::vector<ObjectUse> pending = weigh_pending ? pending_uses(db) : std::vector<ObjectUse>{};
        std::int64_t point = prune_point(db, m_policy, pending);
        for (const auto& age : transaction_ages(db)) {
            if (age.id <= point && age.finished) {
                m_result.pruned.push_back(age.id);
            }
        }
        if (dry_run) {
            plan_objects(point, full ? pending_digests_after(m_store, point) : std::set<std::string>{}, pending);
            return m_result;
        }
        if (full) {
            std::vector<std::string> left = settle_pending_after(m_store, point);
            m_result.left_pending.insert(m_result.left_pending.end(), left.begin(), left.end());
        }
        std::map<std::string, std::uint64_t> sizes;
        for (const auto& use : object_uses(db)) {
            sizes[use.hex] = use.size;
        }
        std::vector<std::int64_t> unhashed = transactions_with_pending(db);
        m_result.objects = point > 0 ? prune_through(db, point) : std::vector<std::string>{};
        for (const auto& hex : m_result.objects) {
            m_result.object_bytes += sizes[hex];
        }
        delete_doomed_objects(m_store);
        if (point > 0 || full) {
            release_holds(point, full);
        }
        for (std::int64_t id : unhashed) { // the pending captures of a transaction just pruned
            if (id <= point && !full) {    // (a full gc removes every pruned staging below)
                remove(m_store.objects().staging_dir(id), true);
            }
        }
        if (full) {
            collect_leftovers();
        }
        return m_result;
    }

private:
    bool over_size_limit_with_pending() {
        if (!m_policy.max_bytes) {
            return false;
        }
        PendingTotals pending = pending_totals(m_store.db());
        return pending.files > 0 && store_totals(m_store.db()).bytes + pending.bytes > *m_policy.max_bytes;
    }

    void plan_objects(std::int64_t point, const std::set<std::string>& settled_later,
                      const std::vector<ObjectUse>& pending) {
        for (const auto& use : with_pending(object_uses(m_store.db()), pending)) {
            if (use.newest_tx <= point && settled_later.count(use.hex) == 0) {
                m_result.objects.push_back(use.hex);
                m_result.object_bytes += use.size;
            }
        }
    }

    void remove(const stdfs::path& path, bool count) {
        if (count) {
            m_result.other_bytes += tree_bytes(path);
        }
        try {
            Fs::instance().remove_tree(path);
        } catch (const FsError& error) {
            if (error.errno_value() != ENOENT) { // a detached `rm` may be emptying trash/ too
                throw;
            }
        }
    }

    // The holds of states no entry after the prune point names (nor the venv's state now):
    // nothing reaches those states any more.
    void release_holds(std::int64_t point, bool full) {
        Database& db = m_store.db();
        std::set<std::string> states;
        Statement query = db.prepare("SELECT state_before, state_after FROM transactions WHERE id > ?");
        query.bind(1, point);
        while (query.step()) {
            for (int column : {0, 1}) {
                if (auto state = query.optional_text(column)) {
                    states.insert(*state);
                }
            }
        }
        if (auto last = m_store.history().last_state()) {
            states.insert(*last);
        }
        std::set<std::string> records;
        for (const auto& id : states) {
            for (const auto& dist : load_state(db, id).value_or(VenvState{}).dists) {
                records.insert(dist.record);
            }
        }
        m_result.released_holds = Holds(db, m_store.root()).keep_only(records, full);
    }

    // trash/, staging of pruned or forgotten transactions, preview layers, and object files the
    // index does not list (a gc killed between its index commit and its unlinks).
    void collect_leftovers() {
        stdfs::path root = m_store.root();
        for (const auto& name : Confinement::instance().names_in(root / "trash")) {
            remove(root / "trash" / name, true);
        }
        std::set<std::int64_t> unpruned; // their staging may hold pre-images a restore could not place
        for (const auto& age : transaction_ages(m_store.db())) {
            if (!age.pruned) {
                unpruned.insert(age.id);
            }
        }
        for (const auto& name : Confinement::instance().names_in(root / "staging")) {
            std::int64_t tx = std::strtoll(name.c_str(), nullptr, 10);
            if (unpruned.count(tx) == 0) {
                remove(root / "staging" / name, true);
            }
        }
        remove_stale_previews(root);
        std::set<std::string> listed;
        for (const auto& use : object_uses(m_store.db())) {
            listed.insert(use.hex);
        }
        for (const auto& prefix : Confinement::instance().names_in(root / "objects")) {
            for (const auto& rest : Confinement::instance().names_in(root / "objects" / prefix)) {
                if (listed.count(prefix + rest) == 0) {
                    remove(root / "objects" / prefix / rest, true);
                }
            }
        }
    }

    Store& m_store;
    const RetentionPolicy& m_policy;
    Collected m_result;
};

std::string id_range(const std::vector<std::int64_t>& ids) {
    if (ids.empty()) {
        return "";
    }
    return ids.size() == 1 ? "tx " + std::to_string(ids.front())
                           : "tx " + std::to_string(ids.front()) + " to " + std::to_string(ids.back());
}

// A saved policy runs after every commit: one that keeps no transaction would prune each change
// as it commits, its removed files deleted and never undoable.
void refuse_keeping_nothing(const RetentionPolicy& policy) {
    if (policy.keep_last && *policy.keep_last < 1) {
        throw usage_error("a policy that keeps no transaction would prune every change as it commits: "
                          "--keep takes 1 or more with --set-policy; nothing was changed");
    }
    if (policy.keep_seconds && *policy.keep_seconds < 1) {
        throw usage_error("a policy that keeps nothing by age would prune every change as it commits: "
                          "--older-than takes 1s or more with --set-policy; nothing was changed");
    }
}

} // namespace

std::string describe_policy(const RetentionPolicy& policy) {
    std::string kept;
    if (policy.keep_last) {
        kept += "the last " + std::to_string(*policy.keep_last) + " committed transactions";
    }
    if (policy.keep_seconds) {
        std::int64_t s = *policy.keep_seconds;
        kept += (kept.empty() ? "" : " and ") + std::string("everything from the last ") +
                (s % 86400 == 0 ? std::to_string(s / 86400) + " days"
                 : s % 3600 == 0 ? std::to_string(s / 3600) + " hours" : std::to_string(s) + " seconds");
    }
    std::string text = kept.empty() ? "keep every transaction" : "keep " + kept;
    if (policy.max_bytes) {
        text += ", at most " + human_bytes(*policy.max_bytes) + " of stored files";
    }
    return text + (policy.automatic ? "; applied after every commit" : "; applied by `venvtx gc` only");
}

std::string describe_store(Store& store) {
    StoreTotals totals = store_totals(store.db());
    std::string packed;
    std::vector<PackInfo> packs = list_packs(store);
    if (!packs.empty()) {
        std::uint64_t bytes = 0;
        std::int64_t members = 0;
        for (const auto& pack : packs) {
            bytes += pack.bytes;
            members += pack.members;
        }
        packed = ", " + std::to_string(members) + " of them packed (" + human_bytes(bytes) + " in " +
                 std::to_string(packs.size()) + " pack" + (packs.size() == 1 ? "" : "s") + ")";
    }
    PendingTotals pending = pending_totals(store.db());
    if (pending.files > 0) {
        packed += ", and " + counted(pending.files, "removed file") + " (" + human_bytes(pending.bytes) +
                  ") not hashed yet";
    }
    return "store: " + human_bytes(totals.bytes) + " in " + counted(totals.objects, "object") + packed +
           "; policy: " + describe_policy(load_policy(store.db()));
}

Outcome collect_garbage(const Context& context, const GcOptions& options) {
    if (!Store::exists(context.store_root)) {
        throw usage_error("nothing to collect: no venvtx history in " + context.store_root.string());
    }
    MutationSession session(context, options.wait_s);
    Store& store = session.store();
    RetentionPolicy policy = load_policy(store.db());
    bool rules_given = options.keep_last || options.older_than_s || options.max_bytes;
    if (rules_given) {
        policy.keep_last = options.keep_last;
        policy.keep_seconds = options.older_than_s;
        policy.max_bytes = options.max_bytes;
    }
    policy.automatic = options.automatic.value_or(policy.automatic);
    if (options.set_policy) {
        refuse_keeping_nothing(policy);
    }
    if (options.set_policy && !options.dry_run) {
        save_policy(store.db(), policy);
        context.out.say("policy: " + describe_policy(policy));
    }
    Collected collected = Collector(store, policy).run(options.dry_run, true);
    const std::vector<std::string>& left_pending = collected.left_pending;
    if (!left_pending.empty()) {
        context.out.verdict("warning: " + counted(left_pending.size(), "captured file") + " changed in the "
                            "store since their removal, e.g. " + left_pending.front() +
                            ": not stored; `venvtx verify` lists them");
    }
    PackingResult packing = pack_cold_objects(store, options.loose_last, options.dry_run);
    StoreTotals totals = store_totals(store.db());
    std::string verb = options.dry_run ? "would prune " : "pruned ";
    if (collected.pruned.empty()) {
        context.out.say(options.dry_run ? "nothing to prune" : "nothing pruned");
    } else {
        context.out.say(verb + counted(collected.pruned.size(), "transaction") + " (" +
                        id_range(collected.pruned) + "; they stay in the log) and " +
                        (options.dry_run ? "free " : "freed ") + human_bytes(collected.object_bytes) + " in " +
                        counted(collected.objects.size(), "object"));
    }
    if (packing.objects > 0) {
        context.out.say((options.dry_run ? "would pack " : "packed ") + counted(packing.objects, "object") + " (" +
                        human_bytes(packing.object_bytes) + ") that only transactions before the newest " +
                        std::to_string(options.loose_last) + " need" +
                        (options.dry_run ? "" : " into " + counted(packing.packs, "pack") + " of " +
                                                    human_bytes(packing.pack_bytes) + " in all"));
    }
    if (collected.other_bytes + packing.freed_bytes > 0 && !options.dry_run) {
        context.out.say("removed " + human_bytes(collected.other_bytes + packing.freed_bytes) +
                        " of loose copies now packed, dead packs, trash, old staging and stray files");
    } else if (collected.other_bytes > 0) {
        context.out.say("removed " + human_bytes(collected.other_bytes) + " of trash, old staging and stray files");
    }
    if (collected.released_holds > 0) {
        context.out.say("let go of " + counted(collected.released_holds, "held file") +
                        " of states nothing reaches now");
    }
    context.out.say(describe_store(store));
    Outcome outcome;
    outcome.document_printed = context.out.json();
    if (context.out.json()) {
        context.out.document(nlohmann::json{{"dry_run", options.dry_run},
                                            {"pruned", collected.pruned},
                                            {"freed_objects", collected.objects.size()},
                                            {"freed_bytes", collected.object_bytes},
                                            {"other_bytes", collected.other_bytes + packing.freed_bytes},
                                            {"released_holds", collected.released_holds},
                                            {"packed", {{"objects", packing.objects},
                                                        {"object_bytes", packing.object_bytes},
                                                        {"packs", packing.packs},
                                                        {"pack_bytes", packing.pack_bytes}}},
                                            {"store", {{"bytes", totals.bytes}, {"objects", totals.objects}}},
                                            {"policy", load_policy(store.db()).json()}}
                                 );
    }
    return outcome;
}

void collect_after_commit(const Context& context, Store& store) {
    try {
        RetentionPolicy policy = load_policy(store.db());
        if (!policy.automatic) {
            return;
        }
        Collected collected = Collector(store, policy).run(false, false);
        delete_dead_packs(store); // pruning may have left packs nothing needs
        if (!collected.left_pending.empty()) {
            context.out.verdict("warning: " + counted(collected.left_pending.size(), "captured file") +
                                " changed in the store since their removal; run `venvtx verify`");
        }
        if (!collected.pruned.empty()) {
            context.out.debug("retention: pruned " + id_range(collected.pruned) + ", freed " +
                              human_bytes(collected.object_bytes));
        }
    } catch (const Error& error) {
        context.out.verdict(std::string("warning: the retention policy could not be applied (") + error.what() +
                            "); run `venvtx gc`");
    }
}

Outcome retain_after(const Context& context, Store& store, Outcome outcome) {
    if (outcome.tx && outcome.tx->state == TxState::committed) {
        collect_after_commit(context, store);
    }
    return outcome;
}

} // namespace venvtx
