// run_command_transaction: link the venv, run the command, keep the pre-images of what changed.
#include "venvtx/txn/command.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/core/sha256.hpp"
#include "venvtx/core/subprocess.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/txn/capture.hpp"
#include "venvtx/txn/engine.hpp"
#include "venvtx/txn/recover.hpp"
#include "venvtx/txn/snapshot.hpp"
#include "venvtx/venv/inventory.hpp"

#include <cstdlib>
#include <optional>
#include <unistd.h>
#include <map>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

constexpr std::uint64_t k_copy_limit = 1 << 20;  // --copy copies files up to this size

std::map<std::string, std::string> installed_versions(const VenvLayout& layout) {
    std::map<std::string, std::string> versions;
    for (const auto& dist : scan_inventory(layout)) {
        versions[dist.name] = dist.version;
    }
    return versions;
}

std::vector<PackageChange> package_changes(const std::map<std::string, std::string>& before,
                                           const std::map<std::string, std::string>& after) {
    std::vector<PackageChange> changes;
    for (const auto& [name, version] : before) {
        auto now = after.find(name);
        if (now == after.end()) {
            changes.push_back({name, version, std::nullopt});
        } else if (now->second != version) {
            changes.push_back({name, version, now->second});
        }
    }
    for (const auto& [name, version] : after) {
        if (before.count(name) == 0) {
            changes.push_back({name, std::nullopt, version});
        }
    }
    return changes;
}

std::string last_line(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
        text.pop_back();
    }
    size_t newline = text.rfind('\n');
    return newline == std::string::npos ? text : text.substr(newline + 1);
}

bool same_state(const NodeState& a, const NodeState& b) {
    return a.type == b.type && a.mode == b.mode &&
           (a.type != NodeType::symlink || a.link_target == b.link_target) &&
           (a.type != NodeType::file || (a.size == b.size && a.mtime_ns == b.mtime_ns));
}

class CommandApply {
public:
    CommandApply(const Context& context, const CommandOptions& options, Store& store, MutationLock& lock,
                 std::map<std::string, InodeFacts> inodes)
        : m_context(context), m_options(options), m_store(store), m_lock(lock), m_inodes(std::move(inodes)) {}

    void operator()(std::int64_t tx, TransactionPlan& plan, std::set<std::string>& new_objects) {
        stdfs::path staging = m_store.objects().staging_dir(tx);
        auto started = std::chrono::steady_clock::now();
        auto lap = [&](const std::string& what) {
            auto now = std::chrono::steady_clock::now();
            m_context.out.debug(what + ": " +
                                std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now - started).count()) +
                                " ms");
            started = now;
        };
        link_pre_images(staging, plan.entries);
        lap("linked " + std::to_string(m_inodes.size()) + " files");
        auto versions_before = installed_versions(m_context.layout);
        std::optional<Error> failed; // a failed command is diffed too, so its changes are undone
        try {
            run_command();
        } catch (const Error& error) {
            failed = error;
        }
        lap("command");
        VenvSnapshot after = snapshot_venv(m_context.layout, m_store.root());
        lap("snapshot after");
        std::vector<std::int64_t> unchanged;
        std::vector<Entry> changed;
        for (auto& entry : plan.entries) {
            auto now = after.states.find(entry.path);
            NodeState now_state = now == after.states.end() ? NodeState{} : now->second;
            if (is_unchanged(entry, now_state, after)) {
                unchanged.push_back(entry.id);
                continue;
            }
            if (changed_in_place(entry, now_state, after)) {
                m_in_place.push_back(entry.path);
                unchanged.push_back(entry.id); // no pre-image: never restored from a wrong one
                continue;
            }
            entry.after = now_state;
            entry.progress = entry.before.type == NodeType::file ? "captured" : "applied";
            changed.push_back(entry);
        }
        std::vector<Entry> added;
        for (const auto& [path, state] : after.states) {
            if (m_snapshot_paths.count(path) == 0) {
                Entry entry;
                entry.path = path;
                entry.after = state;
                entry.progress = "applied";
                added.push_back(entry);
            }
        }
        lap("diff");
        auto objects = hash_pre_images(staging, changed, new_objects);
        lap("hashed pre-images");
        m_store.history().finish_snapshot(tx, unchanged, changed, added, objects);
        lap("index");
        adopt_captured(m_store.objects(), tx, changed);
        discard_links(staging, tx);
        lap("adopted");
        plan.entries = std::move(changed);
        plan.entries.insert(plan.entries.end(), added.begin(), added.end());
        plan.packages = package_changes(versions_before, installed_versions(m_context.layout));
        m_store.history().set_packages(tx, plan.packages);
        lap("package diff");
        if (failed) {
            throw *failed;
        }
        plan.unrestorable = m_in_place;
        if (!m_in_place.empty()) {
            std::string message = std::to_string(m_in_place.size()) +
                                  " file(s) changed in place, no pre-image kept (use --copy): " + m_in_place.front();
            m_store.history().set_message(tx, message);
            m_context.out.verdict("warning: " + message);
        }
    }

private:
    void link_pre_images(const stdfs::path& staging, const std::vector<Entry>& entries) {
        Fs& fs = Fs::instance();
        fs.mkdirs(staging);
        for (const auto& entry : entries) {
            m_snapshot_paths.insert(entry.path);
            if (entry.before.type != NodeType::file) {
                continue;
            }
            stdfs::path path = m_context.layout.root / entry.path;
            stdfs::path staged = staging / std::to_string(entry.id);
            if (m_options.copy_small_files && entry.before.size <= k_copy_limit) {
                fs.copy_file(path, staged, entry.before.mode);
                m_copied.insert(entry.path);
            } else {
                link_or_copy(path, staged, entry.before.mode);
            }
        }
        fs.sync_filesystem(staging);
    }

    static void link_or_copy(const stdfs::path& path, const stdfs::path& staged, mode_t mode) {
        try {
            Fs::instance().link(path, staged);
        } catch (const FsError& error) {
            if (error.errno_value() != EXDEV) {
                throw;
            }
            Fs::instance().copy_file(path, staged, mode); // the store is on another filesystem
        }
    }

    // The links of unchanged files (thousands) go to trash/, deleted by a detached `rm` so the
    // command does not wait for them; they share inodes with live venv files and cost no space.
    void discard_links(const stdfs::path& staging, std::int64_t tx) {
        stdfs::path trash = m_store.root() / "trash";
        Fs::instance().mkdirs(trash);
        stdfs::path target = trash / (std::to_string(tx) + "-" + std::to_string(::getpid()));
        Fs::instance().rename(staging, target);
        spawn_detached({"rm", "-rf", "--one-file-system", target.string()});
    }

    void run_command() {
        SubprocessSpec spec;
        spec.argv = m_options.argv;
        spec.env["VIRTUAL_ENV"] = m_context.layout.root.string();
        const char* path = std::getenv("PATH");
        spec.env["PATH"] = m_context.layout.scripts.string() + (path ? std::string(":") + path : "");
        spec.env["PYTHONHOME"] = std::nullopt;
        spec.inherit_output = !m_context.out.json();
        bool uv = stdfs::path(m_options.argv.front()).filename() == "uv";
        if (uv) {
            m_lock.venv_lock().release();
        }
        SubprocessResult result = run_subprocess(spec);
        if (uv) {
            m_lock.venv_lock().reacquire();
        }
        if (result.exit_code != 0) {
            std::string detail = last_line(result.err); // captured under --json only
            throw Error(ExitCode::usage, command_name() + " exited with status " +
                                             std::to_string(result.exit_code) +
                                             (detail.empty() ? "" : ": " + detail));
        }
    }

    // "pip install" for `python -m pip install ...`, "uv pip" for uv, else the program's name.
    std::string command_name() const {
        const auto& argv = m_options.argv;
        if (argv.size() >= 4 && argv[1] == "-m") {
            return argv[2] + " " + argv[3];
        }
        std::string name = stdfs::path(argv.front()).filename().string();
        return argv.size() >= 3 && name == "uv" ? "uv " + argv[1] + " " + argv[2] : name;
    }

    bool is_unchanged(const Entry& entry, const NodeState& now, const VenvSnapshot& after) const {
        if (!same_state(entry.before, now)) {
            return false;
        }
        if (entry.before.type != NodeType::file) {
            return true;
        }
        const InodeFacts& was = m_inodes.at(entry.path);
        const InodeFacts& is = after.inodes.at(entry.path);
        return was.inode == is.inode && was.device == is.device;
    }

    // Same inode, other content: the command wrote into the file instead of replacing it.
    bool changed_in_place(const Entry& entry, const NodeState& now, const VenvSnapshot& after) const {
        if (entry.before.type != NodeType::file || now.type != NodeType::file || m_copied.count(entry.path)) {
            return false;
        }
        const InodeFacts& was = m_inodes.at(entry.path);
        const InodeFacts& is = after.inodes.at(entry.path);
        return was.inode == is.inode && was.device == is.device;
    }

    std::vector<std::pair<std::string, std::uint64_t>> hash_pre_images(const stdfs::path& staging,
                                                                       std::vector<Entry>& changed,
                                                                       std::set<std::string>& new_objects) {
        std::vector<stdfs::path> paths;
        std::vector<Entry*> files;
        for (auto& entry : changed) {
            if (entry.before.type == NodeType::file) {
                paths.push_back(staging / std::to_string(entry.id));
                files.push_back(&entry);
            }
        }
        std::vector<FileDigest> digests = sha256_files(paths);
        std::vector<std::pair<std::string, std::uint64_t>> objects;
        for (size_t i = 0; i < files.size(); ++i) {
            files[i]->before.object = digests[i].hex;
            if (!m_store.objects().has(digests[i].hex) && new_objects.insert(digests[i].hex).second) {
                objects.emplace_back(digests[i].hex, digests[i].size);
            }
        }
        return objects;
    }

    const Context& m_context;
    const CommandOptions& m_options;
    Store& m_store;
    MutationLock& m_lock;
    std::set<std::string> m_snapshot_paths;
    std::set<std::string> m_copied;
    std::map<std::string, InodeFacts> m_inodes;
    std::vector<std::string> m_in_place;
};

} // namespace

std::vector<std::string> installer_command(const VenvLayout& layout, const std::string& installer,
                                           const std::vector<std::string>& specs,
                                           const std::vector<std::string>& extra_args) {
    std::string chosen = installer;
    if (chosen == "auto") {
        SubprocessSpec probe_uv;
        probe_uv.argv = {"sh", "-c", "command -v uv"};
        chosen = run_subprocess(probe_uv).exit_code == 0 ? "uv" : "pip";
    }
    std::vector<std::string> argv;
    if (chosen == "uv") {
        argv = {"uv", "pip", "install", "--python", layout.python.string()};
    } else if (chosen == "pip") {
        argv = {layout.python.string(), "-m", "pip", "install", "--disable-pip-version-check"};
    } else {
        throw usage_error("--installer takes auto, pip or uv, not '" + installer + "'");
    }
    argv.insert(argv.end(), specs.begin(), specs.end());
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    return argv;
}

Outcome run_command_transaction(const Context& context, const CommandOptions& options) {
    if (options.argv.empty()) {
        throw usage_error("no command to run: venvtx run -- CMD [ARGS...]");
    }
    if (options.mutation.dry_run) {
        context.out.say("would run " + options.argv.front() + " as one transaction (dry run: nothing changed)");
        return {};
    }
    MutationSession session(context, options.mutation.wait_s);
    Store& store = session.store();
    TransactionPlan plan;
    plan.kind = options.kind;
    auto started = std::chrono::steady_clock::now();
    VenvSnapshot snapshot = snapshot_venv(context.layout, store.root());
    context.out.debug("snapshot of " + std::to_string(snapshot.states.size()) + " paths: " +
                      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                         std::chrono::steady_clock::now() - started).count()) + " ms");
    for (const auto& [path, state] : snapshot.states) {
        Entry entry;
        entry.path = path;
        entry.before = state;
        entry.after = state;
        entry.progress = "snapshot";
        plan.entries.push_back(std::move(entry));
    }
    plan.apply = CommandApply(context, options, store, session.lock(), std::move(snapshot.inodes));
    return run_transaction(context, options.mutation, store, std::move(plan));
}

} // namespace venvtx
