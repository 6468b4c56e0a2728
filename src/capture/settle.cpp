// settle_pending: hash in parallel, index, then adopt.
#include "venvtx/capture/settle.hpp"

#include "venvtx/capture/pending_check.hpp"
#include "venvtx/capture/private_copy.hpp"
#include "venvtx/core/confinement.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/core/progress.hpp"
#include "venvtx/core/sha256.hpp"
#include "venvtx/store/holds.hpp"
#include "venvtx/store/object_keys.hpp"
#include "venvtx/store/pending_captures.hpp"

#include <cstdlib>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

struct Settled {
    std::int64_t entry_id;
    stdfs::path staged;
    FileDigest digest;
    const PendingCapture* row = nullptr;  // null: it was not pending (finish_settling)
};

void index_settled(Store& store, std::int64_t tx, const std::vector<Settled>& settled) {
    SqlTransaction transaction(store.db());
    Statement object = store.db().prepare("INSERT OR IGNORE INTO objects (sha256, size, created_by) VALUES (?, ?, ?)");
    Statement entry = store.db().prepare("UPDATE entries SET before_object = ?, before_size = ? WHERE id = ?");
    Statement done = store.db().prepare("DELETE FROM pending_captures WHERE entry_id = ?");
    for (const auto& item : settled) {
        auto size = static_cast<std::int64_t>(item.digest.size);
        object.bind(1, item.digest.hex).bind(2, size).bind(3, tx).run();
        entry.bind(1, item.digest.hex).bind(2, size).bind(3, item.entry_id).run();
        done.bind(1, item.entry_id).run();
    }
    transaction.commit();
}

// Those not moved yet are pending again, as they were (their files were not touched), and an
// object row only they named goes: a settle that failed (ENOSPC, EIO) leaves no entry naming an
// object that is neither loose nor packed.
void unsettle(Store& store, const std::vector<Settled>& rest) {
    SqlTransaction transaction(store.db());
    Statement entry = store.db().prepare("UPDATE entries SET before_object = NULL WHERE id = ?");
    Statement unnamed = store.db().prepare(
        "DELETE FROM objects WHERE sha256 = ?1 AND NOT EXISTS (SELECT 1 FROM entries WHERE before_object = ?1 OR "
        "after_object = ?1) AND sha256 NOT IN (SELECT sha256 FROM pack_members)");
    std::vector<PendingCapture> rows;
    for (const auto& item : rest) {
        entry.bind(1, item.entry_id).run();
        rows.push_back(*item.row);
    }
    for (const auto& item : rest) {
        unnamed.bind(1, item.digest.hex).run();
    }
    insert_pending(store.db(), rows);
    transaction.commit();
}

void adopt_all(Store& store, const std::vector<Settled>& settled) {
    std::vector<std::string> adopted;
    std::size_t done = 0;
    try {
        for (; done < settled.size(); ++done) {
            store.objects().adopt(settled[done].staged, settled[done].digest.hex);
            adopted.push_back(settled[done].digest.hex);
        }
    } catch (const Error&) {
        std::vector<Settled> rest(settled.begin() + static_cast<std::ptrdiff_t>(done), settled.end());
        if (!rest.empty() && rest.front().row) {
            unsettle(store, rest);
        }
        record_object_keys(store, adopted);
        throw;
    }
    record_object_keys(store, adopted);
}

void remove_if_empty(const stdfs::path& dir) {
    try {
        Fs::instance().rmdir(dir);
    } catch (const FsError&) {
        // still holding files (pending, or left by a restore), or already gone
    }
}

} // namespace

std::vector<std::string> settle_pending(Store& store, std::int64_t tx) {
    std::map<std::string, PendingSource> sources = pending_sources_of(store, tx);
    Progress::Phase phase("hashing pending captures of tx " + std::to_string(tx));
    // A removal kept uv's hard links by rename: an object is the store's own, so it gets a copy
    // first, and the copy is what is checked against the content hash and stored.
    for (const auto& [path, source] : sources) {
        if (observe_node(source.staged).type == NodeType::file) {
            keep_private(source.staged, std::nullopt, false, hold_path(store.root(), source.row.content_hash));
        }
    }
    PendingCheck checked = check_pending(sources, true);
    std::vector<Settled> settled;
    for (const auto& [path, digest] : checked.digests) {
        const PendingSource& source = sources.at(path);
        settled.push_back({source.row.entry_id, source.staged, digest, &source.row});
    }
    index_settled(store, tx, settled);
    adopt_all(store, settled);
    remove_if_empty(store.objects().staging_dir(tx));
    return checked.unintact;
}

std::vector<std::string> settle_pending_after(Store& store, std::int64_t after) {
    std::vector<std::string> left;
    for (std::int64_t tx : transactions_with_pending(store.db())) {
        if (tx > after) {
            std::vector<std::string> some = settle_pending(store, tx);
            left.insert(left.end(), some.begin(), some.end());
        }
    }
    return left;
}

std::set<std::string> pending_digests_after(Store& store, std::int64_t after) {
    std::set<std::string> hexes;
    for (std::int64_t tx : transactions_with_pending(store.db())) {
        if (tx > after) {
            for (const auto& [path, digest] : check_pending(pending_sources_of(store, tx), true).digests) {
                hexes.insert(digest.hex);
            }
        }
    }
    return hexes;
}

std::vector<StagedObject> staged_objects(Store& store, std::int64_t tx) {
    Statement named = store.db().prepare("SELECT id, before_object FROM entries WHERE tx_id = ? AND "
                                         "before_type = 'file' AND before_object IN (SELECT sha256 FROM objects)");
    named.bind(1, tx);
    std::vector<StagedObject> found;
    while (named.step()) {
        stdfs::path staged = store.root() / "staging" / std::to_string(tx) / std::to_string(named.integer(0));
        if (observe_node(staged).type == NodeType::file) {
            found.push_back({named.integer(0), staged, named.text(1)});
        }
    }
    return found;
}

void finish_settling(Store& store) {
    stdfs::path staging_root = store.root() / "staging";
    for (const auto& name : Confinement::instance().names_in(staging_root)) {
        std::int64_t tx = std::strtoll(name.c_str(), nullptr, 10);
        auto record = store.history().find(tx);
        if (!record || record->state == TxState::started || record->state == TxState::applied ||
            record->state == TxState::interrupted || record->state == TxState::pruned) {
            continue; // in flight (recover's), or pruned (gc's)
        }
        std::vector<Settled> settled;
        // Only objects the index lists: any other staged file is a pre-image a restore could not
        // place, and stays where it is.
        for (const auto& object : staged_objects(store, tx)) {
            FileDigest digest = sha256_file(object.staged);
            if (digest.hex == object.hex) {
                settled.push_back({object.entry_id, object.staged, digest, nullptr});
            }
        }
        adopt_all(store, settled);
        remove_if_empty(staging_root / name);
    }
}

} // namespace venvtx
