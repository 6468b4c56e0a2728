// verify: re-hash store objects and RECORD-listed venv files, naming every difference.
#include "venvtx/upkeep/verify.hpp"

#include "venvtx/capture/pending_check.hpp"
#include "venvtx/capture/settle.hpp"
#include "venvtx/core/confinement.hpp"
#include "venvtx/core/sha256.hpp"
#include "venvtx/store/lock.hpp"
#include "venvtx/store/packs.hpp"
#include "venvtx/store/pending_captures.hpp"
#include "venvtx/store/pruning.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/venv/inventory.hpp"
#include "venvtx/venv/path_resolver.hpp"

#include <random>
#include <set>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

struct Pending {
    stdfs::path path;
    VerifyProblem if_bad;
    std::string expected;  // hex for objects, RECORD hash for files
    std::optional<std::uint64_t> size;
};

void check_all(std::vector<Pending>& pending, bool record_form, VerifyReport& report) {
    std::vector<stdfs::path> present;
    std::vector<Pending*> owners;
    for (auto& item : pending) {
        if (observe_node(item.path).type != NodeType::file) {
            item.if_bad.what = record_form ? "missing file" : "missing object";
            report.problems.push_back(item.if_bad);
            continue;
        }
        present.push_back(item.path);
        owners.push_back(&item);
    }
    std::vector<FileDigest> digests = sha256_files(present);
    for (size_t i = 0; i < digests.size(); ++i) {
        Pending& item = *owners[i];
        std::string actual = record_form ? record_hash_from_hex(digests[i].hex) : digests[i].hex;
        if (actual != item.expected || (item.size && *item.size != digests[i].size)) {
            item.if_bad.what = record_form ? "modified file" : "corrupted object";
            item.if_bad.detail = "expected " + item.expected + ", found " + actual;
            report.problems.push_back(item.if_bad);
        }
    }
}

// Files under objects/ the index does not list: a lost index row, or something put there. The
// files of objects a gc dropped (doomed) are not strays: the next mutating command deletes them.
void check_strays(Store& store, std::set<std::string> indexed, VerifyReport& report) {
    for (const auto& hex : doomed_objects(store.db())) {
        indexed.insert(hex);
    }
    std::error_code ec;
    stdfs::path objects = store.root() / "objects";
    for (auto it = stdfs::recursive_directory_iterator(objects, ec); !ec && it != stdfs::recursive_directory_iterator();
         it.increment(ec)) {
        if (it->is_directory(ec) && !it->is_symlink(ec)) {
            continue;
        }
        stdfs::path rel = it->path().lexically_relative(objects);
        std::string hex = rel.parent_path().string() + rel.filename().string();
        if (hex.size() != 64 || indexed.count(hex) == 0) {
            report.problems.push_back({"stray file in the store", it->path().string(), "",
                                       "not an object the index lists"});
        }
    }
}

// A removal's unhashed captures: each staged file must still be the inode it recorded, or hash
// to its RECORD's hash (they have no hash of their own until `gc` stores them).
void check_pending(Store& store, VerifyReport& report) {
    for (std::int64_t tx : transactions_with_pending(store.db())) {
        std::map<std::string, PendingSource> sources = pending_sources_of(store, tx);
        report.pending_checked += sources.size();
        for (const auto& path : check_pending(sources).unintact) {
            const PendingSource& source = sources.at(path);
            report.problems.push_back({observe_node(source.staged).type == NodeType::absent ? "missing capture"
                                                                                            : "changed capture",
                                       source.staged.string(), "tx " + std::to_string(tx) + ": " + path,
                                       "a removed file kept unhashed: a rollback would refuse it"});
        }
    }
}

// Objects the index lists whose bytes still sit in staging: a gc or rollback was killed between
// indexing them and moving them in. `recover` (or any mutating command) finishes the move.
std::set<std::string> objects_in_staging(Store& store) {
    std::set<std::string> hexes;
    for (const auto& name : Confinement::instance().names_in(store.root() / "staging")) {
        for (const auto& object : staged_objects(store, std::strtoll(name.c_str(), nullptr, 10))) {
            hexes.insert(object.hex);
        }
    }
    return hexes;
}

void check_objects(const Context& context, const VerifyOptions& options, VerifyReport& report) {
    if (!Store::exists(context.store_root)) {
        return;
    }
    Store store(context.store_root, false);
    FileLock lock(context.store_root / "lock", options.wait_s, "the store");
    for (const auto& record : store.history().unfinished()) {
        report.unfinished.push_back(record.id);
    }
    std::mt19937 random(std::random_device{}());
    std::uniform_real_distribution<double> percent(0, 100);
    std::vector<Pending> pending;
    std::set<std::string> indexed;
    std::set<std::string> packed = all_packed(store);
    std::set<std::string> in_staging = objects_in_staging(store);
    for (const auto& [hex, reference] : store.history().object_references()) {
        indexed.insert(hex);
        if (reference.empty()) {
            report.problems.push_back({"unreferenced object", store.objects().object_path(hex).string(), "",
                                       "no transaction refers to it"});
        }
        if (packed.count(hex) != 0 && !store.objects().has(hex)) {
            continue; // checked in its pack, below
        }
        if (options.sample_percent < 100 && percent(random) >= options.sample_percent) {
            continue;
        }
        Pending item;
        item.path = store.objects().object_path(hex);
        item.expected = hex;
        item.if_bad = {"", item.path.string(), reference,
                       in_staging.count(hex) != 0 ? "still in staging, from a gc or rollback cut short: "
                                                    "`venvtx recover` moves it in"
                                                  : ""};
        pending.push_back(std::move(item));
    }
    report.objects_checked = pending.size();
    check_all(pending, false, report);
    check_strays(store, indexed, report);
    check_pending(store, report);
    PackCheck packs = verify_packs(store, options.sample_percent);
    report.packed_checked = static_cast<std::size_t>(packs.members_checked);
    for (const auto& problem : packs.problems) {
        report.problems.push_back({problem.what, problem.where, "", problem.detail});
    }
}

void check_files(const Context& context, VerifyReport& report) {
    PathResolver resolver(context.layout, context.store_root);
    std::vector<Pending> pending;
    for (const auto& dist : scan_inventory(context.layout)) {
        if (dist.record_error) {
            report.problems.push_back({"unreadable RECORD", dist.dist_info.string(), dist.name, *dist.record_error});
            continue;
        }
        for (const auto& entry : dist.record) {
            if (entry.hash.rfind("sha256=", 0) != 0) {
                continue; // RECORD itself, bytecode, other algorithms
            }
            try {
                auto rel = resolver.resolve(dist.site_packages, entry.path, dist.name);
                Pending item;
                item.path = context.layout.root / rel.value_or(entry.path);
                item.expected = entry.hash;
                item.size = entry.size;
                item.if_bad = {"", rel.value_or(entry.path), dist.name, ""};
                pending.push_back(std::move(item));
            } catch (const Error& error) {
                report.problems.push_back({"path outside the venv", entry.path, dist.name, error.what()});
            }
        }
    }
    report.files_checked = pending.size();
    check_all(pending, true, report);
}

} // namespace

VerifyReport verify(const Context& context, const VerifyOptions& options) {
    VerifyReport report;
    check_objects(context, options, report);
    check_files(context, report);
    return report;
}

} // namespace venvtx
