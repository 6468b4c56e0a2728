// check_pending: inode keys first, content hashes where a key changed.
#include "venvtx/capture/pending_check.hpp"

#include "venvtx/store/pending_captures.hpp"

#include <set>

namespace venvtx {

namespace stdfs = std::filesystem;

std::map<std::string, PendingSource> pending_sources_of(Store& store, std::int64_t tx) {
    std::map<std::string, PendingSource> sources;
    for (auto& row : pending_of(store.db(), tx)) {
        stdfs::path staged = store.objects().staging_dir(tx) / std::to_string(row.entry_id);
        std::string path = row.path;
        sources.emplace(std::move(path), PendingSource{std::move(staged), std::move(row)});
    }
    return sources;
}

PendingCheck check_pending(const std::map<std::string, PendingSource>& sources, bool read_all) {
    struct ToRead {
        const std::string* path;
        InodeKey key;       // before reading
        bool by_content;    // its key changed: its bytes decide
    };
    PendingCheck checked;
    std::vector<ToRead> reads;
    std::vector<stdfs::path> paths;
    for (const auto& [path, source] : sources) {
        std::optional<InodeKey> now = inode_key(source.staged);
        if (!now) {
            checked.unintact.push_back(path);
        } else if (*now != source.row.key || read_all) {
            reads.push_back({&path, *now, *now != source.row.key});
            paths.push_back(source.staged);
        }
    }
    std::vector<FileDigest> digests = sha256_files(paths);
    for (std::size_t i = 0; i < reads.size(); ++i) {
        const std::string& path = *reads[i].path;
        const PendingSource& source = sources.at(path);
        bool unchanged_while_read = inode_key(source.staged) == reads[i].key;
        bool intact = unchanged_while_read &&
                      (!reads[i].by_content || record_hash_from_hex(digests[i].hex) == source.row.content_hash);
        if (!intact) {
            checked.unintact.push_back(path);
            if (unchanged_while_read) {
                checked.changed.emplace(path, ChangedCapture{reads[i].key, digests[i]});
            }
            continue;
        }
        checked.digests.emplace(path, digests[i]);
        if (reads[i].by_content) {
            checked.rekeyed.emplace(path, reads[i].key);
        }
    }
    return checked;
}

void retake_changed(const Output& out, Store& store, std::map<std::string, PendingSource>& sources,
                    const PendingCheck& checked) {
    if (checked.changed.empty()) {
        return;
    }
    out.say("--force: taking " + counted(checked.changed.size(), "captured file") + " as they are now, "
            "not matching the hash recorded at the removal, e.g. " + checked.changed.begin()->first);
    SqlTransaction transaction(store.db());
    for (const auto& [path, changed] : checked.changed) {
        PendingSource& source = sources.at(path);
        source.row.key = changed.key;
        source.row.content_hash = record_hash_from_hex(changed.digest.hex);
        retake_pending(store.db(), source.row.entry_id, changed.key, source.row.content_hash);
    }
    transaction.commit();
}

void rekey_pending(Store& store, std::map<std::string, PendingSource>& sources,
                   const std::map<std::string, InodeKey>& keys) {
    SqlTransaction transaction(store.db());
    for (const auto& [path, key] : keys) {
        PendingSource& source = sources.at(path);
        source.row.key = key;
        rekey_pending(store.db(), source.row.entry_id, key);
    }
    transaction.commit();
}

void rekey_returned(Store& store, std::map<std::string, PendingSource>& sources, const std::vector<std::string>& paths) {
    std::map<std::string, InodeKey> keys;
    for (const auto& path : paths) {
        const InodeKey& was = sources.at(path).row.key;
        std::optional<InodeKey> key = inode_key(sources.at(path).staged);
        // Only what the renames moved (ctime): a file written meanwhile (a killed rollback's file,
        // edited before `recover`) keeps the old key, and its content hash decides later.
        if (key && key->size == was.size && key->mtime_ns == was.mtime_ns) {
            keys.emplace(path, *key);
        }
    }
    rekey_pending(store, sources, keys);
}

void forget_restored(Store& store, const std::map<std::string, PendingSource>& own,
                     const std::vector<std::string>& unrestored) {
    std::set<std::string> kept(unrestored.begin(), unrestored.end());
    SqlTransaction transaction(store.db());
    Statement forget = store.db().prepare("DELETE FROM pending_captures WHERE entry_id = ?");
    for (const auto& [path, source] : own) {
        if (kept.count(path) == 0 || observe_node(source.staged).type == NodeType::absent) {
            forget.bind(1, source.row.entry_id).run();
        }
    }
    transaction.commit();
}

} // namespace venvtx
