// Packs: writing and indexing them, unpacking what a restore needs, dropping dead ones, checking.
#include "venvtx/store/packs.hpp"

#include "venvtx/core/clock.hpp"
#include "venvtx/core/confinement.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/core/node_state.hpp"
#include "venvtx/core/progress.hpp"
#include "venvtx/core/sha256.hpp"
#include "venvtx/store/pack_file.hpp"

#include <chrono>
#include <random>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

constexpr std::size_t k_chunk = 1 << 20;
const char* k_suffix = ".tar.zst";


PackInfo pack_row(Statement& query) {
    return {query.integer(0), query.text(1), static_cast<std::uint64_t>(query.integer(2)), query.integer(3)};
}

const char* k_select_packs =
    "SELECT p.id, p.file, p.bytes, (SELECT COUNT(*) FROM pack_members m WHERE m.pack_id = p.id) FROM packs p"
    " WHERE p.state = 'sealed'";

// One member streamed into a temporary file beside its object name, hashed on the way, and
// renamed into place only when its bytes are the object's.
// The owner (as root) first, since a chown clears security.capability; then the extended
// attributes this process may set (the others stay unset, as for any copy: see Fs).
void give_member_facts(int fd, const PackMember& member) {
    if (::geteuid() == 0) {
        ::fchown(fd, member.uid, member.gid);
    }
    for (const auto& [name, value] : member.xattrs) {
        ::fsetxattr(fd, name.c_str(), value.data(), value.size(), 0);
    }
}

void unpack_member(Store& store, const stdfs::path& pack, const PackMember& member, const MemberReader& read,
                   std::vector<char>& buffer) {
    const std::string& hex = member.hex;
    Fs& fs = Fs::instance();
    stdfs::path target = store.objects().object_path(hex);
    stdfs::path temporary = store.root() / "unpacking" / hex;
    fs.mkdirs(target.parent_path());
    fs.mkdirs(temporary.parent_path());
    if (observe_node(temporary).type != NodeType::absent) {
        fs.unlink(temporary); // a killed unpack's
    }
    UniqueFd out = fs.create_file(temporary, 0444);
    Sha256Stream digest;
    try {
        for (std::size_t n = read(buffer.data(), buffer.size()); n > 0; n = read(buffer.data(), buffer.size())) {
            digest.update(buffer.data(), n);
            fs.write(out.get(), buffer.data(), n, temporary);
            Progress::advance(0, n);
        }
        FileDigest got = digest.finish();
        if (got.hex != hex) {
            throw Error(ExitCode::verify_failed, "pack " + pack.string() + ": member " + hex +
                                                     " is corrupted: its bytes hash to " + got.hex);
        }
        give_member_facts(out.get(), member);
        fs.fsync(out.get(), temporary);
    } catch (...) {
        out = UniqueFd();
        try {
            fs.unlink(temporary);
        } catch (const FsError&) {
            // recover and the next unpack delete it; the first error is the one to report
        }
        throw;
    }
    fs.rename(temporary, target);
}

} // namespace

stdfs::path packs_dir(const Store& store) { return store.root() / "packs"; }

PackInfo write_pack(Store& store, const std::vector<std::string>& hexes, const std::string& label) {
    Fs& fs = Fs::instance();
    stdfs::path dir = packs_dir(store);
    fs.mkdirs(dir);
    auto stamp = std::chrono::system_clock::now().time_since_epoch().count();
    std::string file = "pack-" + label + "-" + std::to_string(stamp) + k_suffix;
    std::vector<PackSource> sources;
    for (const auto& hex : hexes) {
        sources.push_back({hex, store.objects().object_path(hex)});
    }
    Database& db = store.db();
    PackInfo info;
    info.file = file;
    db.prepare("INSERT INTO packs (file, state, bytes, created_at) VALUES (?, 'writing', 0, ?)")
        .bind(1, file)
        .bind(2, utc_now_iso8601())
        .run();
    info.id = db.last_insert_id();
    info.bytes = write_pack_file(dir / file, sources);
    info.members = static_cast<std::int64_t>(hexes.size());
    fs.fsync_dir(dir);
    SqlTransaction transaction(db);
    db.prepare("UPDATE packs SET state = 'sealed', bytes = ? WHERE id = ?")
        .bind(1, static_cast<std::int64_t>(info.bytes))
        .bind(2, info.id)
        .run();
    Statement member = db.prepare("INSERT OR REPLACE INTO pack_members (sha256, pack_id, ordinal) VALUES (?, ?, ?)");
    for (std::size_t i = 0; i < hexes.size(); ++i) {
        member.bind(1, hexes[i]).bind(2, info.id).bind(3, static_cast<std::int64_t>(i)).run();
    }
    transaction.commit();
    return info;
}

std::vector<PackInfo> list_packs(Store& store) {
    std::vector<PackInfo> packs;
    Statement query = store.db().prepare(std::string(k_select_packs) + " ORDER BY p.id");
    while (query.step()) {
        packs.push_back(pack_row(query));
    }
    return packs;
}

std::map<std::string, std::int64_t> packed_objects(Store& store, const std::set<std::string>& hexes) {
    std::map<std::string, std::int64_t> packed;
    Statement query = store.db().prepare("SELECT pack_id FROM pack_members WHERE sha256 = ?");
    for (const auto& hex : hexes) {
        query.bind(1, hex);
        if (query.step()) {
            packed[hex] = query.integer(0);
        }
        query.reset();
    }
    return packed;
}

std::set<std::string> all_packed(Store& store) {
    std::set<std::string> packed;
    Statement query = store.db().prepare("SELECT sha256 FROM pack_members");
    while (query.step()) {
        packed.insert(query.text(0));
    }
    return packed;
}

std::set<std::string> unpack_objects(Store& store, const std::set<std::string>& hexes, PackReading mode) {
    std::set<std::string> wanted;
    for (const auto& hex : hexes) {
        if (!store.objects().has(hex)) {
            wanted.insert(hex);
        }
    }
    std::map<std::int64_t, std::set<std::string>> by_pack;
    for (const auto& [hex, pack] : packed_objects(store, wanted)) {
        by_pack[pack].insert(hex);
    }
    std::set<std::string> unpacked;
    if (by_pack.empty()) {
        return unpacked;
    }
    std::map<std::int64_t, std::string> files;
    for (const auto& pack : list_packs(store)) {
        files[pack.id] = pack.file;
    }
    Progress::Phase phase("unpacking stored files", by_pack.size(), by_pack.size() == 1 ? "pack" : "packs");
    std::vector<char> buffer(k_chunk);
    for (auto& [pack, members] : by_pack) {
        stdfs::path path = packs_dir(store) / files[pack];
        try {
            read_pack_file(path, [&](const PackMember& member, const MemberReader& read) {
                if (members.erase(member.hex) == 0) {
                    return; // not needed: skipped unread
                }
                try {
                    unpack_member(store, path, member, read, buffer);
                    unpacked.insert(member.hex);
                } catch (const Error& error) {
                    if (mode == PackReading::strict || dynamic_cast<const FsError*>(&error) != nullptr) {
                        throw;
                    }
                }
            });
            if (!members.empty()) {
                throw Error(ExitCode::verify_failed, "pack " + path.string() + " lacks object " + *members.begin() +
                                                         " that the index says it holds");
            }
        } catch (const Error& error) {
            if (mode == PackReading::strict || dynamic_cast<const FsError*>(&error) != nullptr) {
                throw; // an I/O failure here is worth another try, not a verdict on the pack
            }
        }
        Progress::advance(1);
    }
    return unpacked;
}

std::uint64_t delete_loose_copies(Store& store, const std::set<std::string>& hexes) {
    std::uint64_t freed = 0;
    for (const auto& [hex, pack] : packed_objects(store, hexes)) {
        struct stat st {};
        stdfs::path path = store.objects().object_path(hex);
        if (Confinement::instance().stat_node(path, st) && S_ISREG(st.st_mode)) {
            Fs::instance().unlink(path);
            freed += static_cast<std::uint64_t>(st.st_size);
        }
    }
    return freed;
}

std::uint64_t delete_dead_packs(Store& store) {
    Database& db = store.db();
    {
        SqlTransaction transaction(db);
        db.prepare("UPDATE packs SET state = 'dead' WHERE state = 'sealed' AND NOT EXISTS "
                   "(SELECT 1 FROM pack_members m JOIN objects o ON o.sha256 = m.sha256 WHERE m.pack_id = packs.id)")
            .run();
        db.prepare("DELETE FROM pack_members WHERE pack_id IN (SELECT id FROM packs WHERE state = 'dead')").run();
        transaction.commit();
    }
    std::vector<std::pair<std::int64_t, std::string>> garbage;
    std::set<std::string> known;
    {
        Statement query = db.prepare("SELECT id, file, state FROM packs");
        while (query.step()) {
            known.insert(query.text(1));
            if (query.text(2) != "sealed") {
                garbage.emplace_back(query.integer(0), query.text(1));
            }
        }
    }
    std::uint64_t freed = 0;
    auto unlink_counted = [&](const stdfs::path& path) {
        struct stat st {};
        if (Confinement::instance().stat_node(path, st)) {
            freed += static_cast<std::uint64_t>(st.st_size);
            Fs::instance().unlink(path);
        }
    };
    for (const auto& [id, file] : garbage) { // the file first: a row left behind says it may be there
        unlink_counted(packs_dir(store) / file);
        db.prepare("DELETE FROM packs WHERE id = ?").bind(1, id).run();
    }
    for (const auto& name : Confinement::instance().names_in(packs_dir(store))) {
        struct stat st {};
        if (known.count(name) == 0 && Confinement::instance().stat_node(packs_dir(store) / name, st) &&
            S_ISREG(st.st_mode)) {
            unlink_counted(packs_dir(store) / name); // nothing refers to it (verify names anything else)
        }
    }
    return freed;
}

void remove_unpack_leftovers(Store& store) {
    for (const auto& name : Confinement::instance().names_in(store.root() / "unpacking")) {
        Fs::instance().unlink(store.root() / "unpacking" / name);
    }
}

PackCheck verify_packs(Store& store, double sample_percent) {
    PackCheck check;
    std::mt19937 random(std::random_device{}());
    std::uniform_real_distribution<double> percent(0, 100);
    std::set<std::string> indexed;
    {
        Statement query = store.db().prepare("SELECT sha256 FROM objects");
        while (query.step()) {
            indexed.insert(query.text(0));
        }
    }
    std::set<std::string> listed;
    std::vector<char> buffer(k_chunk);
    for (const auto& pack : list_packs(store)) {
        listed.insert(pack.file);
        if (sample_percent < 100 && percent(random) >= sample_percent) {
            continue;
        }
        std::map<std::string, std::int64_t> members;
        Statement query = store.db().prepare("SELECT sha256, ordinal FROM pack_members WHERE pack_id = ?");
        query.bind(1, pack.id);
        while (query.step()) {
            members[query.text(0)] = query.integer(1);
        }
        stdfs::path path = packs_dir(store) / pack.file;
        try {
            read_pack_file(path, [&](const PackMember& member, const MemberReader& read) {
                const std::string& hex = member.hex;
                if (members.erase(hex) == 0) {
                    return; // a member no longer indexed (its object was pruned): not a problem
                }
                Sha256Stream digest;
                for (std::size_t n = read(buffer.data(), buffer.size()); n > 0; n = read(buffer.data(), buffer.size())) {
                    digest.update(buffer.data(), n);
                }
                ++check.members_checked;
                FileDigest got = digest.finish();
                if (got.hex != hex) {
                    check.problems.push_back({"corrupted packed object", path.string() + ":" + hex,
                                              "its bytes hash to " + got.hex});
                }
            });
        } catch (const Error& error) {
            check.problems.push_back({"unreadable pack", path.string(), error.what()});
            continue;
        }
        for (const auto& [hex, ordinal] : members) {
            if (indexed.count(hex) != 0) {
                check.problems.push_back({"missing packed object", path.string() + ":" + hex,
                                          "the index says member " + std::to_string(ordinal) + " holds it"});
            }
        }
    }
    {
        Statement query = store.db().prepare("SELECT file FROM packs WHERE state != 'sealed'");
        while (query.step()) {
            listed.insert(query.text(0)); // an unfinished or dead pack's file: the next gc deletes it
        }
    }
    for (const auto& name : Confinement::instance().names_in(packs_dir(store))) {
        if (listed.count(name) == 0) {
            check.problems.push_back({"stray file in the store", (packs_dir(store) / name).string(),
                                      "not a pack the index lists"});
        }
    }
    return check;
}

} // namespace venvtx
