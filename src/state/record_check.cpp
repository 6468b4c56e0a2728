// check_record_files and untracked_files.
#include "venvtx/state/record_check.hpp"

#include "venvtx/core/inode_key.hpp"
#include "venvtx/core/sha256.hpp"
#include "venvtx/core/unique_fd.hpp"
#include "venvtx/state/state_index.hpp"
#include "venvtx/venv/record.hpp"

#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <map>
#include <set>
#include <sys/stat.h>

namespace venvtx {

namespace {

namespace stdfs = std::filesystem;

constexpr std::size_t k_key_bytes = 5 * sizeof(std::int64_t);

std::string key_bytes(const InodeKey& key) {
    std::int64_t fields[5] = {key.dev, key.ino, key.size, key.mtime_ns, key.ctime_ns};
    return std::string(reinterpret_cast<const char*>(fields), k_key_bytes);
}

std::vector<RecordEntry> record_of(Database& db, const DistState& dist) {
    auto text = dist.record.empty() ? std::nullopt : load_record_text(db, dist.record);
    if (!text) {
        return {};
    }
    try {
        return parse_record(*text, dist.dist_info + "/RECORD");
    } catch (const std::exception&) { // a torn RECORD lists nothing to check
        return {};
    }
}

// RECORD paths are relative to the dist-info's site-packages (or go up from it: scripts, data).
std::string venv_path(const DistState& dist, const std::string& recorded) {
    return (stdfs::path(dist.dist_info).parent_path() / recorded).lexically_normal().string();
}

} // namespace

std::vector<FileFinding> check_record_files(const VenvLayout& layout, Database& db, const VenvState& now) {
    std::map<std::string, std::pair<std::string, std::string>> cached; // dist-info -> (record, keys)
    Statement rows = db.prepare("SELECT dist_info, record, keys FROM record_checks");
    while (rows.step()) {
        cached[rows.text(0)] = {rows.text(1), rows.blob(2)};
    }
    std::vector<FileFinding> findings;
    std::map<std::string, std::pair<std::string, std::string>> fresh;
    for (const auto& dist : now.dists) {
        std::vector<RecordEntry> entries = record_of(db, dist);
        auto found = cached.find(dist.dist_info);
        std::string old = found != cached.end() && found->second.first == dist.record ? found->second.second : "";
        std::string keys(entries.size() * k_key_bytes, '\0');
        // Each path is looked up from the dist-info's site-packages, as RECORD writes it.
        stdfs::path site = layout.root / stdfs::path(dist.dist_info).parent_path();
        UniqueFd site_fd(::open(site.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        for (std::size_t i = 0; i < entries.size() && site_fd.valid(); ++i) {
            const RecordEntry& entry = entries[i];
            if (entry.hash.empty()) {
                continue; // RECORD itself, bytecode: RECORD gives nothing to compare
            }
            struct stat st {};
            if (::fstatat(site_fd.get(), entry.path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
                findings.push_back({"missing", venv_path(dist, entry.path), dist.name});
                continue;
            }
            if (!S_ISREG(st.st_mode)) {
                findings.push_back({"not a file", venv_path(dist, entry.path), dist.name});
                continue;
            }
            if (entry.size && static_cast<std::uint64_t>(st.st_size) != *entry.size) {
                findings.push_back({"size", venv_path(dist, entry.path), dist.name});
                continue;
            }
            std::string key = key_bytes(inode_key_of(st));
            if (old.size() == keys.size() && std::memcmp(old.data() + i * k_key_bytes, key.data(), k_key_bytes) == 0) {
                keys.replace(i * k_key_bytes, k_key_bytes, key);
                continue;
            }
            if (record_hash_from_hex(sha256_file(site / entry.path).hex) != entry.hash) {
                findings.push_back({"content", venv_path(dist, entry.path), dist.name});
                continue;
            }
            if (settled(inode_key_of(st))) {
                keys.replace(i * k_key_bytes, k_key_bytes, key);
            }
        }
        if (keys != old) {
            fresh[dist.dist_info] = {dist.record, keys};
        }
    }
    std::vector<std::string> gone; // dist-infos no longer installed
    for (const auto& [dist_info, row] : cached) {
        bool present = false;
        for (const auto& dist : now.dists) {
            present = present || dist.dist_info == dist_info;
        }
        if (!present) {
            gone.push_back(dist_info);
        }
    }
    if ((!fresh.empty() || !gone.empty()) && !db.read_only()) {
        SqlTransaction transaction(db);
        Statement forget = db.prepare("DELETE FROM record_checks WHERE dist_info = ?");
        for (const auto& dist_info : gone) {
            forget.bind(1, dist_info).run();
        }
        Statement keep = db.prepare("INSERT OR REPLACE INTO record_checks (dist_info, record, keys) VALUES (?, ?, ?)");
        for (const auto& [dist_info, row] : fresh) {
            keep.bind(1, dist_info).bind(2, row.first).bind_blob(3, row.second).run();
        }
        transaction.commit();
    }
    return findings;
}

std::vector<FileFinding> untracked_files(const VenvLayout& layout, Database& db, const VenvState& now) {
    std::set<std::string> listed;
    for (const auto& dist : now.dists) {
        for (const auto& entry : record_of(db, dist)) {
            listed.insert(venv_path(dist, entry.path));
        }
    }
    std::vector<FileFinding> findings;
    for (const auto& site : layout.site_packages) {
        std::error_code ec;
        for (auto it = stdfs::recursive_directory_iterator(site, ec); !ec && it != stdfs::recursive_directory_iterator();
             it.increment(ec)) {
            if (it->is_directory(ec) && !it->is_symlink(ec)) {
                if (it->path().filename() == "__pycache__") {
                    it.disable_recursion_pending();
                }
                continue;
            }
            std::string rel = it->path().lexically_relative(layout.root).string();
            if (listed.count(rel) == 0) {
                findings.push_back({"untracked", rel, ""});
            }
        }
    }
    return findings;
}

} // namespace venvtx
