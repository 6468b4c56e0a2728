// hold_state: a hard link (or, as the policy allows, a copy) in the store for each file of a newly
// recorded distribution.
#include "venvtx/state/state_holds.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/core/sha256.hpp"
#include "venvtx/state/state_index.hpp"
#include "venvtx/store/holds.hpp"
#include "venvtx/store/settings.hpp"
#include "venvtx/venv/path_resolver.hpp"
#include "venvtx/venv/record.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace venvtx {

namespace {

namespace stdfs = std::filesystem;

// Directories opened beneath their roots without following a symlink: the last one of the venv's
// kept (a RECORD lists a directory's files together), and holds/. Links go through the fs seam's
// hold steps (Fs::hold_link). A hold cut short is harmless: relinked by the next hold, swept by gc.
class HoldLinker {
public:
    HoldLinker(const VenvLayout& layout, const Holds& holds, HoldPolicy policy)
        : m_layout(layout), m_holds(holds), m_policy(std::move(policy)) {}

    bool stat_leaf(const std::string& rel, struct stat& st) {
        stdfs::path path(rel);
        std::string dir = path.parent_path().string();
        if (dir != m_dir_rel || m_dir.get() < 0) {
            m_dir_rel = dir;
            try {
                m_dir = Confinement::instance().open_dir(m_layout.root / dir);
            } catch (const Error&) {
                m_dir = UniqueFd();
                return false;
            }
        }
        m_leaf = path.filename().string();
        return ::fstatat(m_dir.get(), m_leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    }

    // Links the leaf stat_leaf found as the hold of `hex` (or copies it, as the policy allows).
    bool link_last(const std::string& hex, const struct stat& st) {
        if (m_holds_dir.get() < 0) {
            try {
                UniqueFd store = Confinement::instance().open_dir(m_holds.dir().parent_path());
                ::mkdirat(store.get(), m_holds.dir().filename().c_str(), 0700);
                m_holds_dir = Confinement::instance().open_dir(m_holds.dir());
            } catch (const Error&) {
                return false;
            }
        }
        Fs& fs = Fs::instance();
        for (int attempt = 0; attempt < 2; ++attempt) {
            bool held = m_policy.linkable && fs.hold_link(m_dir.get(), m_leaf.c_str(), m_holds_dir.get(), hex.c_str());
            if (!held && (!m_policy.linkable || errno == EPERM || errno == EMLINK || errno == EXDEV)) {
                held = fs.hold_copy(m_dir.get(), m_leaf.c_str(), m_holds_dir.get(), hex.c_str(), m_policy.copies);
            }
            if (held) {
                return true;
            }
            if (errno != EEXIST) {
                m_failed = m_failed || errno == ENOSPC || errno == EDQUOT || errno == EIO;
                return false;
            }
            struct stat there {};
            if (::fstatat(m_holds_dir.get(), hex.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0 &&
                there.st_ino == st.st_ino && there.st_dev == st.st_dev) {
                return true; // linked by a hold cut short before its row
            }
            if (!fs.hold_unlink(m_holds_dir.get(), hex.c_str()) && errno != ENOENT) {
                m_failed = true;
                return false;
            }
        }
        return false;
    }

    // Whether a link failed for want of room or by an I/O error since the last call: the
    // distribution is then held again by the next command, not recorded as held.
    bool take_failure() { return std::exchange(m_failed, false); }

private:
    const VenvLayout& m_layout;
    const Holds& m_holds;
    HoldPolicy m_policy;
    std::string m_dir_rel;
    UniqueFd m_dir;
    std::string m_leaf;
    UniqueFd m_holds_dir;
    bool m_failed = false;
};

std::int64_t mtime_ns_of(const struct stat& st) {
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

} // namespace

HoldPolicy hold_policy(const VenvLayout& layout, Store& store) {
    HoldPolicy policy;
    std::optional<std::string> saved = read_setting(store.db(), "config.hold"); // `config hold`: a JSON list
    policy.copies = saved && nlohmann::json::parse(*saved, nullptr, false) == nlohmann::json::array({"copy"});
    struct stat venv {}, held {};
    if (::stat(layout.root.c_str(), &venv) != 0 || ::stat(store.root().c_str(), &held) != 0) {
        policy.unavailable = "the venv or the store cannot be read";
        return policy;
    }
    policy.linkable = venv.st_dev == held.st_dev;
    if (!policy.linkable && !policy.copies) {
        policy.unavailable = "the store is on another filesystem than the venv (`venvtx config hold copy` holds "
                             "copies there)";
    }
    return policy;
}

void say_held(const Output& out, const HoldCount& count) {
    if (count.dists == 0) {
        return;
    }
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.2f ms", count.ms);
    std::string said =
        "held " + counted(count.linked, "file") + " of " + counted(count.dists, "distribution") + " in " + ms;
    out.debug(count.unheld > 0 ? said + ", " + std::to_string(count.unheld) + " not held" : said);
}

HoldCount hold_state(const VenvLayout& layout, Store& store, const VenvState& state) {
    HoldCount count;
    auto started = std::chrono::steady_clock::now();
    auto finish = [&] {
        count.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
        return count;
    };
    try {
        Holds holds(store.db(), store.root());
        HoldPolicy policy = hold_policy(layout, store);
        bool holdable = policy.unavailable.empty();
        // How files are held now; when that changed (`config hold copy` set, the store on the
        // venv's filesystem again), a distribution some of whose files got no hold is tried again.
        std::string method = !holdable ? "none" : policy.linkable ? "link" : "copy";
        bool method_changed = read_setting(store.db(), "holds.method").value_or("none") != method;
        std::set<std::string> known = holds.held_records(holdable && method_changed);
        std::vector<const DistState*> fresh;
        for (const auto& dist : state.dists) {
            if (!dist.record.empty() && known.insert(dist.record).second) {
                fresh.push_back(&dist);
            }
        }
        if (fresh.empty() && !method_changed) {
            return finish();
        }
        std::set<std::string> hashes = holds.held_hashes();
        PathResolver resolver(layout, store.root());
        HoldLinker linker(layout, holds, policy);
        SqlTransaction saved(store.db()); // one commit for the whole state
        for (const DistState* dist : fresh) {
            auto text = load_record_text(store.db(), dist->record);
            if (!text) {
                continue;
            }
            std::vector<RecordEntry> entries;
            try {
                entries = parse_record(*text, dist->dist_info + "/RECORD");
            } catch (const Error&) {
                continue;
            }
            stdfs::path base = layout.root / stdfs::path(dist->dist_info).parent_path();
            std::string record_rel = dist->dist_info + "/RECORD";
            nlohmann::json files = nlohmann::json::array();
            std::set<std::string> dirs;
            std::vector<HeldFile> held;
            std::int64_t unheld = 0;
            for (const auto& entry : entries) {
                std::optional<std::string> rel;
                try {
                    rel = resolver.resolve(base, entry.path, dist->name);
                } catch (const Error&) { // outside the venv: not the venv's to hold
                    ++unheld;
                    continue;
                }
                struct stat st {};
                if (!rel || !linker.stat_leaf(*rel, st) || !S_ISREG(st.st_mode)) {
                    continue; // listed but not there (or not a file): the state never had it
                }
                std::string hex = *rel == record_rel ? dist->record : hex_from_record_hash(entry.hash);
                if (hex.empty()) {
                    try {
                        hex = sha256_file(layout.root / *rel).hex;
                    } catch (const Error&) {
                        ++unheld;
                        continue;
                    }
                }
                files.push_back({"f", *rel, st.st_mode & 07777, st.st_size, mtime_ns_of(st), hex});
                for (stdfs::path dir = stdfs::path(*rel).parent_path(); !dir.empty(); dir = dir.parent_path()) {
                    if (!dirs.insert(dir.string()).second) {
                        break; // and so are its parents
                    }
                }
                if (hashes.count(hex) != 0) {
                    continue;
                }
                if (holdable && linker.link_last(hex, st)) {
                    held.push_back({hex, static_cast<std::int64_t>(st.st_size)});
                    hashes.insert(hex);
                    ++count.linked;
                } else {
                    ++unheld;
                }
            }
            nlohmann::json items = nlohmann::json::array();
            for (const auto& dir : dirs) { // parents first: a set of paths sorts them so
                struct stat st {};
                if (Confinement::instance().stat_node(layout.root / dir, st) && S_ISDIR(st.st_mode)) {
                    items.push_back({"d", dir, st.st_mode & 07777});
                }
            }
            for (auto& file : files) {
                items.push_back(std::move(file));
            }
            count.unheld += unheld;
            if (linker.take_failure()) {
                continue; // its links stay, and are found again (same inode) by the next hold
            }
            holds.save(dist->record, items, unheld, held);
            ++count.dists;
        }
        if (method_changed) {
            write_setting(store.db(), "holds.method", method);
        }
        saved.commit();
    } catch (const std::exception&) { // a damaged index, a full disk: this state is not held
    }
    return finish();
}

} // namespace venvtx
