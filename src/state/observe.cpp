// observe_state: one stat per file that names a distribution, and reads only where one moved.
#include "venvtx/state/observe.hpp"

#include "venvtx/core/file_text.hpp"
#include "venvtx/core/inode_key.hpp"
#include "venvtx/core/json_text.hpp"
#include "venvtx/core/sha256.hpp"
#include "venvtx/state/state_index.hpp"
#include "venvtx/store/venv_facts.hpp"
#include "venvtx/venv/inventory.hpp"

#include <algorithm>
#include <ctime>
#include <map>
#include <set>
#include <sys/stat.h>
#include <unordered_map>

namespace venvtx {

namespace {

namespace stdfs = std::filesystem;

constexpr const char* k_named_by[] = {"", "RECORD", "METADATA", "INSTALLER", "PKG-INFO"};

// The dist-info's key: each file's InodeKey, "-" for one that is missing. `settled`: none of them
// changed within the last two seconds.
std::string dist_key(const stdfs::path& dist_info, bool& settled) {
    std::string key;
    settled = true;
    for (const char* name : k_named_by) {
        struct stat st {};
        stdfs::path path = *name ? dist_info / name : dist_info;
        if (::lstat(path.c_str(), &st) != 0) {
            key += "-;";
            continue;
        }
        InodeKey inode = inode_key_of(st);
        key += std::to_string(inode.dev) + ":" + std::to_string(inode.ino) + ":" + std::to_string(inode.size) + ":" +
               std::to_string(inode.mtime_ns) + ":" + std::to_string(inode.ctime_ns) + ";";
        settled = settled && venvtx::settled(inode);
    }
    return key;
}

struct Cached {
    std::string key;
    std::string dist;
};

// Of two distributions of one name, every one but the first in directory order (`order[i]`
// is `dists[i]`'s place) is shadowed: importlib.metadata, and so pip, sees the first alone.
void mark_shadowed(std::vector<DistState>& dists, const std::vector<size_t>& order) {
    std::vector<size_t> by_order(dists.size());
    for (size_t i = 0; i < dists.size(); ++i) {
        by_order[order[i]] = i;
    }
    std::set<std::string> named;
    for (size_t i : by_order) {
        dists[i].shadowed = !named.insert(dists[i].normalized).second;
    }
}

} // namespace

VenvState observe_state(const VenvLayout& layout, Database& db) {
    struct Seen {
        DistInfoDir dir;
        std::string rel;
        std::string key;
        bool settled = false;
        size_t order = 0; // in the directory: the first of a name is the one pip sees
    };
    std::vector<Seen> seen;
    std::string keys; // every dist-info's key, by path: the venv's state unchanged when this is
    bool all_settled = true;
    for (auto& dir : list_installed_infos(layout)) {
        Seen& one = seen.emplace_back();
        one.order = seen.size() - 1;
        one.rel = dir.dist_info.lexically_relative(layout.root).string();
        one.key = dist_key(dir.dist_info, one.settled);
        one.dir = std::move(dir);
        all_settled = all_settled && one.settled;
    }
    std::sort(seen.begin(), seen.end(), [](const Seen& a, const Seen& b) { return a.rel < b.rel; });
    for (const auto& one : seen) {
        keys += one.rel + "=" + std::to_string(one.order) + "=" + one.key + "\n";
    }
    // The fast path: every key as when the state was last observed (and settled then).
    bool known_keys = venv_fact(db, "observed.keys") == keys;
    if (all_settled && known_keys) {
        if (auto known = venv_fact(db, "observed.state")) {
            if (auto state = load_state(db, *known)) {
                return *state;
            }
        }
    }
    std::unordered_map<std::string, Cached> cache;
    Statement rows = db.prepare("SELECT dist_info, key, dist FROM dist_facts");
    while (rows.step()) {
        cache.emplace(rows.text(0), Cached{rows.text(1), rows.text(2)});
    }
    std::vector<DistState> dists;
    std::map<std::string, Cached> fresh;      // read now and settled: kept for next time
    std::map<std::string, std::string> texts;  // RECORD texts the index lacks
    for (const auto& one : seen) {
        auto found = cache.find(one.rel);
        if (found != cache.end() && found->second.key == one.key) {
            try {
                dists.push_back(dist_from_json(nlohmann::json::parse(found->second.dist)));
                continue;
            } catch (const nlohmann::json::exception&) { // a damaged row: read the dist-info again
            }
        }
        Distribution read = read_installed(one.dir, layout.root);
        // Any bytes (pip's tests write INSTALLER b"\xc0\xff\xee"): a state is always JSON.
        DistState dist{valid_utf8(read.name), valid_utf8(read.normalized), valid_utf8(read.version),
                       valid_utf8(one.rel), valid_utf8(read.installer), ""};
        if (auto text = read_file_text(one.dir.dist_info / "RECORD")) {
            dist.record = sha256_hex(*text);
            if (!has_record_text(db, dist.record)) {
                texts.emplace(dist.record, std::move(*text));
            }
        }
        if (one.settled) {
            fresh[one.rel] = Cached{one.key, dist_json(dist).dump()};
        }
        dists.push_back(std::move(dist));
    }
    std::vector<size_t> order;
    for (const auto& one : seen) {
        order.push_back(one.order);
    }
    mark_shadowed(dists, order);
    VenvState state = make_state(std::move(dists));
    std::set<std::string> present;
    for (const auto& dist : state.dists) {
        present.insert(dist.dist_info);
    }
    std::vector<std::string> stale; // cached dist-infos that are gone
    for (const auto& [rel, row] : cache) {
        if (present.count(rel) == 0) {
            stale.push_back(rel);
        }
    }
    bool remember = all_settled && !known_keys;
    if (db.read_only() || (fresh.empty() && texts.empty() && stale.empty() && !remember && has_state(db, state.id))) {
        return state;
    }
    SqlTransaction transaction(db);
    for (const auto& [sha, text] : texts) {
        save_record_text(db, sha, text); // INSERT OR IGNORE: another venvtx may have kept it meanwhile
    }
    Statement forget = db.prepare("DELETE FROM dist_facts WHERE dist_info = ?");
    for (const auto& rel : stale) {
        forget.bind(1, rel).run();
    }
    Statement keep = db.prepare("INSERT OR REPLACE INTO dist_facts (dist_info, key, dist) VALUES (?, ?, ?)");
    for (const auto& [rel, row] : fresh) {
        keep.bind(1, rel).bind(2, row.key).bind(3, row.dist).run();
    }
    save_state(db, state);
    if (remember) {
        set_venv_facts(db, {{"observed.keys", keys}, {"observed.state", state.id}});
    }
    transaction.commit();
    return state;
}

} // namespace venvtx
