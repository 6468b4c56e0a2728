// Holds: the rows, the layouts, adopting a hold as an object and dropping what no state needs.
#include "venvtx/store/holds.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/core/json_text.hpp"
#include "venvtx/core/sha256.hpp"

#include <sys/stat.h>

namespace venvtx {

namespace stdfs = std::filesystem;

stdfs::path hold_path(const stdfs::path& store_root, const std::string& record_hash) {
    std::string hex = hex_from_record_hash(record_hash);
    return hex.empty() ? stdfs::path() : store_root / "holds" / hex;
}

Holds::Holds(Database& db, stdfs::path store_root) : m_db(db), m_dir(std::move(store_root) / "holds") {}

stdfs::path Holds::path_of(const std::string& hex) const {
    if (hex.size() != 64) {
        throw Error(ExitCode::internal, "no hold named '" + hex + "'");
    }
    return m_dir / hex;
}

std::set<std::string> Holds::held_records(bool whole) {
    std::set<std::string> records;
    Statement query = m_db.prepare(whole ? "SELECT record FROM held_dists WHERE unheld = 0" : "SELECT record FROM held_dists");
    while (query.step()) {
        records.insert(query.text(0));
    }
    return records;
}

std::set<std::string> Holds::held_hashes() {
    std::set<std::string> hashes;
    Statement query = m_db.prepare("SELECT sha256 FROM holds");
    while (query.step()) {
        hashes.insert(query.text(0));
    }
    return hashes;
}

std::optional<nlohmann::json> Holds::layout(const std::string& record) {
    Statement query = m_db.prepare("SELECT layout FROM held_dists WHERE record = ?");
    query.bind(1, record);
    if (!query.step()) {
        return std::nullopt;
    }
    return nlohmann::json::parse(query.text(0));
}

std::optional<std::int64_t> Holds::unheld(const std::string& record) {
    Statement query = m_db.prepare("SELECT unheld FROM held_dists WHERE record = ?");
    query.bind(1, record);
    return query.step() ? std::optional(query.integer(0)) : std::nullopt;
}

std::optional<HeldFile> Holds::find(const std::string& hex) {
    Statement query = m_db.prepare("SELECT size FROM holds WHERE sha256 = ?");
    query.bind(1, hex);
    if (!query.step()) {
        return std::nullopt;
    }
    return HeldFile{hex, query.integer(0)};
}

void Holds::save(const std::string& record, const nlohmann::json& layout, std::int64_t unheld,
                 const std::vector<HeldFile>& held) {
    Statement hold = m_db.prepare("INSERT OR REPLACE INTO holds (sha256, size) VALUES (?, ?)");
    for (const auto& file : held) {
        hold.bind(1, file.sha256).bind(2, file.size).run();
    }
    m_db.prepare("INSERT OR REPLACE INTO held_dists (record, layout, unheld) VALUES (?, ?, ?)")
        .bind(1, record)
        .bind(2, stored_json_text(layout))
        .bind(3, unheld)
        .run();
}

std::map<std::string, HoldUse> Holds::adopt(const std::set<std::string>& hexes, ObjectStore& objects) {
    std::map<std::string, HoldUse> uses;
    std::vector<std::string> single;  // the hold is its inode's only name
    std::vector<stdfs::path> single_paths;
    std::vector<std::pair<std::string, std::int64_t>> shared;
    for (const auto& hex : hexes) {
        auto row = find(hex);
        struct stat st {};
        if (!row || !Confinement::instance().stat_node(path_of(hex), st)) {
            uses[hex] = HoldUse::missing;
        } else if (!S_ISREG(st.st_mode) || static_cast<std::int64_t>(st.st_size) != row->size) {
            uses[hex] = HoldUse::changed;
        } else if (st.st_nlink == 1) {
            single.push_back(hex);
            single_paths.push_back(path_of(hex));
        } else {
            shared.emplace_back(hex, row->size);
        }
    }
    // The bytes decide: one hold serves every path of its content, and a restore that moved it
    // into the venv set that path's mtime on it. A hold with no other name becomes the object
    // itself; one the venv (an identical file elsewhere) or uv's cache still names is copied,
    // since an object is the store's own: what is done to it (chmod 0444, a move into the venv)
    // must never reach a file someone else names.
    std::vector<FileDigest> digests = sha256_files(single_paths); // side by side
    for (std::size_t i = 0; i < single.size(); ++i) {
        const std::string& hex = single[i];
        if (digests[i].hex != hex) {
            uses[hex] = HoldUse::changed;
            continue;
        }
        stdfs::path object = objects.object_path(hex);
        Fs::instance().mkdirs(object.parent_path());
        Fs::instance().link(single_paths[i], object);
        index_object(hex, static_cast<std::int64_t>(digests[i].size));
        uses[hex] = HoldUse::adopted;
    }
    for (const auto& [hex, size] : shared) {
        stdfs::path object = objects.object_path(hex);
        Fs::instance().mkdirs(object.parent_path());
        Fs::instance().copy_whole(path_of(hex), object, 0444);
        if (sha256_file(object).hex != hex) {
            Fs::instance().unlink(object);
            uses[hex] = HoldUse::changed;
            continue;
        }
        index_object(hex, size);
        uses[hex] = HoldUse::adopted;
    }
    return uses;
}

void Holds::index_object(const std::string& hex, std::int64_t size) {
    m_db.prepare("INSERT OR IGNORE INTO objects (sha256, size, created_by) VALUES (?, ?, NULL)")
        .bind(1, hex)
        .bind(2, size)
        .run();
}

std::int64_t Holds::keep_only(const std::set<std::string>& records, bool sweep) {
    std::set<std::string> needed;
    std::vector<std::string> dropped_layouts;
    {
        Statement query = m_db.prepare("SELECT record, layout FROM held_dists");
        while (query.step()) {
            if (records.count(query.text(0)) == 0) {
                dropped_layouts.push_back(query.text(0));
                continue;
            }
            for (const auto& item : nlohmann::json::parse(query.text(1))) {
                if (item.at(0) == "f") {
                    needed.insert(item.at(5).get<std::string>());
                }
            }
        }
    }
    std::set<std::string> rows = held_hashes();
    std::vector<std::string> dropped;
    for (const auto& hex : rows) {
        if (needed.count(hex) == 0) {
            dropped.push_back(hex);
        }
    }
    {
        SqlTransaction transaction(m_db);
        Statement forget_layout = m_db.prepare("DELETE FROM held_dists WHERE record = ?");
        for (const auto& record : dropped_layouts) {
            forget_layout.bind(1, record).run();
        }
        Statement forget = m_db.prepare("DELETE FROM holds WHERE sha256 = ?");
        for (const auto& hex : dropped) {
            forget.bind(1, hex).run();
        }
        transaction.commit();
    }
    for (const auto& hex : dropped) {
        try {
            Fs::instance().unlink(path_of(hex));
        } catch (const FsError& error) {
            if (error.errno_value() != ENOENT) {
                throw;
            }
        }
    }
    if (!sweep) {
        return static_cast<std::int64_t>(dropped.size());
    }
    for (const auto& hex : Confinement::instance().names_in(m_dir)) {
        if (needed.count(hex) == 0 || rows.count(hex) == 0) {
            Fs::instance().unlink(m_dir / hex);
        }
    }
    return static_cast<std::int64_t>(dropped.size());
}

} // namespace venvtx
