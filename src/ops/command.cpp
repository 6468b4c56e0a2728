// run_command_transaction: capture, run the command, keep the pre-images of what changed.
#include "venvtx/ops/command.hpp"

#include "venvtx/capture/capture.hpp"
#include "venvtx/capture/capture_choice.hpp"
#include "venvtx/capture/command_capture.hpp"
#include "venvtx/capture/live_scan.hpp"
#include "venvtx/capture/snapshot.hpp"
#include "venvtx/core/choice.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/core/mutation_trap.hpp"
#include "venvtx/core/sha256.hpp"
#include "venvtx/core/subprocess.hpp"
#include "venvtx/ops/command_plan.hpp"
#include "venvtx/ops/outside_changes.hpp"
#include "venvtx/preview/upper_layer.hpp"
#include "venvtx/store/object_keys.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/txn/engine.hpp"
#include "venvtx/txn/mutation_session.hpp"
#include "venvtx/txn/preview.hpp"
#include "venvtx/txn/recover.hpp"
#include "venvtx/upkeep/gc.hpp"
#include "venvtx/venv/inventory.hpp"
#include "venvtx/venv/names.hpp"
#include "venvtx/venv/own_distribution.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <unistd.h>
#include <map>
#include <memory>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

std::string last_line(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
        text.pop_back();
    }
    size_t newline = text.rfind('\n');
    return newline == std::string::npos ? text : text.substr(newline + 1);
}

SubprocessSpec command_spec(const Context& context, const CommandOptions& options) {
    SubprocessSpec spec;
    spec.argv = options.argv;
    spec.env = activated_environment(context.layout);
    spec.inherit_output = !context.out.json();
    return spec;
}

// "pip install" for `python -m pip install ...`, "uv pip install" for uv, "sync" for its
// installer line, else the program's name.
std::string command_name(const CommandOptions& options) {
    const std::vector<std::string>& argv = options.argv;
    if (options.kind == "sync") {
        return "sync";
    }
    if (argv.size() >= 4 && argv[1] == "-m") {
        return argv[2] + " " + argv[3];
    }
    std::string name = stdfs::path(argv.front()).filename().string();
    return argv.size() >= 3 && name == "uv" ? "uv " + argv[1] + " " + argv[2] : name;
}

void check_exit(const CommandOptions& options, const SubprocessResult& result) {
    if (result.exit_code != 0) {
        std::string detail = last_line(result.err); // captured under --json only
        throw Error(ExitCode::usage, "command_failed",
                    command_name(options) + " exited with status " + std::to_string(result.exit_code) +
                        (detail.empty() ? "" : ": " + detail) + prompt_hint(options.argv),
                    {{"exit_code", result.exit_code}});
    }
}

class CommandApply {
public:
    CommandApply(const Context& context, const CommandOptions& options, Store& store, MutationLock& lock,
                 const LiveScan& live_before, bool touch, std::map<std::string, InodeFacts> inodes)
        : m_context(context), m_options(options), m_store(store), m_lock(lock), m_live_before(live_before),
          m_touch(touch), m_inodes(std::move(inodes)) {}

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
        CaptureTarget target{m_context.layout, m_store.root(), staging, tx};
        std::unique_ptr<CommandCapture> capture =
            m_touch ? make_touch_capture(target, m_store.history())
                    : make_link_capture(target, plan.entries, std::move(m_inodes), m_options.copy_small_files);
        SubprocessSpec spec = command_spec(m_context, m_options);
        capture->prepare(spec);
        lap(m_touch ? "watching the command" : capture->describe());
        auto versions_before = installed_versions(m_context.layout);
        std::optional<Error> failed; // a failed command is diffed too, so its changes are undone
        try {
            run_command(spec);
        } catch (const Error& error) {
            failed = error;
        }
        lap(m_touch ? "command (" + capture->describe() + ")" : "command");
        CommandDiff diff = capture->diff();
        lap("diff");
        auto objects = hash_pre_images(staging, diff.changed, new_objects);
        lap("hashed pre-images");
        m_store.history().finish_snapshot(tx, diff.unchanged, diff.changed, diff.added, objects);
        lap("index");
        record_object_keys(m_store, adopt_captured(m_store.objects(), tx, diff.changed));
        discard_links(staging, tx);
        lap("adopted");
        plan.entries = std::move(diff.changed);
        plan.entries.insert(plan.entries.end(), diff.added.begin(), diff.added.end());
        plan.packages = package_changes(versions_before, installed_versions(m_context.layout));
        m_store.history().set_packages(tx, plan.packages);
        lap("package diff");
        if (failed) {
            throw *failed;
        }
        plan.unrestorable = diff.in_place;
        if (m_touch) {
            // The kernel read a path again when it made the call: one another thread of the
            // command flipped meanwhile was changed unseen. Named, never "restored".
            for (const auto& change : changed_outside(m_context, m_store, m_live_before, tx)) {
                plan.unrestorable.push_back(change.path);
            }
        }
        if (!diff.in_place.empty()) {
            std::string message = counted(diff.in_place.size(), "file") +
                                  " changed in place, no pre-image kept (use --copy): " + diff.in_place.front();
            m_store.history().set_message(tx, message);
            m_context.out.verdict("warning: " + message);
        }
    }

private:
    // The links of unchanged files (thousands, with link capture) go to trash/, deleted by a
    // detached `rm` so the command does not wait for them; they share inodes with live venv
    // files and cost no space.
    void discard_links(const stdfs::path& staging, std::int64_t tx) {
        stdfs::path trash = m_store.root() / "trash";
        Fs::instance().mkdirs(trash);
        stdfs::path target = trash / (std::to_string(tx) + "-" + std::to_string(::getpid()));
        Fs::instance().rename(staging, target);
        spawn_detached({"rm", "-rf", "--one-file-system", target.string()});
    }

    // <venv>/.lock is uv's lock as well as ours: any command may run uv (`sh -c 'uv pip ...'`) and
    // must be able to take it. The store's lock, held throughout, keeps other venvtx out.
    void run_command(const SubprocessSpec& spec) {
        m_lock.venv_lock().release();
        SubprocessResult result = run_subprocess(spec);
        m_lock.venv_lock().reacquire();
        check_exit(m_options, result);
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
            if (!m_store.history().has_object(digests[i].hex) && new_objects.insert(digests[i].hex).second) {
                objects.emplace_back(digests[i].hex, digests[i].size);
            }
        }
        return objects;
    }

    const Context& m_context;
    const CommandOptions& m_options;
    Store& m_store;
    MutationLock& m_lock;
    const LiveScan& m_live_before;
    bool m_touch;
    std::map<std::string, InodeFacts> m_inodes;
};

// --capture auto: touch where the kernel allows it, unless --copy asks for link capture or
// an install would rewrite a large share of the venv (see capture_choice.hpp).
bool use_touch_capture(const Context& context, const CommandOptions& options) {
    if (options.capture == CaptureMode::link) {
        return false;
    }
    if (options.capture == CaptureMode::touch) {
        if (options.copy_small_files) {
            throw usage_error("--copy goes with --capture link (touch capture copies what is written in place anyway)");
        }
        if (!MutationTrap::supported()) {
            throw usage_error("--capture touch needs seccomp user notification (x86_64 Linux 5.5+), "
                              "which this system refuses; use --capture link");
        }
        return true;
    }
    if (options.copy_small_files || !MutationTrap::supported()) {
        return false;
    }
    CaptureEstimate estimate = estimate_capture(context.layout, options.specs);
    context.out.debug("capture: the named distributions hold " + std::to_string(estimate.named_files) + " of " +
                      std::to_string(estimate.venv_files) + " recorded files: " +
                      (estimate.prefer_link() ? "link" : "touch") + " capture");
    return !estimate.prefer_link();
}

TransactionPlan in_place_plan(const Context& context, const CommandOptions& options, Store& store, MutationLock& lock,
                              const LiveScan& live_before, bool touch) {
    TransactionPlan plan;
    plan.kind = options.kind;
    std::map<std::string, InodeFacts> inodes;
    if (!touch) { // link capture journals the whole venv first
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
            entry.progress = EntryProgress::snapshot;
            plan.entries.push_back(std::move(entry));
        }
        inodes = std::move(snapshot.inodes);
    }
    plan.apply = CommandApply(context, options, store, lock, live_before, touch, std::move(inodes));
    plan.restore = [&context, &store, kind = options.kind](std::int64_t tx) {
        return restore_journaled(context, store, tx, kind, true); // also right when the command failed halfway
    };
    return plan;
}

} // namespace

CaptureMode capture_mode_from(const std::string& text) {
    return choice_from<CaptureMode>("--capture", text,
                                    {{"auto", CaptureMode::automatic}, {"touch", CaptureMode::touch},
                                     {"link", CaptureMode::link}});
}

Installer installer_from(const std::string& text) {
    return choice_from<Installer>("--installer", text,
                                  {{"auto", Installer::automatic}, {"pip", Installer::pip}, {"uv", Installer::uv}});
}

std::vector<std::string> installer_command(const VenvLayout& layout, Installer installer,
                                           const std::vector<std::string>& specs,
                                           const std::vector<std::string>& extra_args) {
    if (installer == Installer::automatic) {
        SubprocessSpec probe_uv;
        probe_uv.argv = {"sh", "-c", "command -v uv"};
        installer = run_subprocess(probe_uv).exit_code == 0 ? Installer::uv : Installer::pip;
    }
    std::vector<std::string> argv;
    if (installer == Installer::uv) {
        argv = {"uv", "pip", "install", "--python", layout.python.string()};
    } else {
        argv = {layout.python.string(), "-m", "pip", "install", "--disable-pip-version-check"};
    }
    argv.insert(argv.end(), specs.begin(), specs.end());
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    return argv;
}

// "uninstall" in place of the installer's "install" (pip's with -y), then `names`.
std::vector<std::string> uninstall_command(const std::vector<std::string>& installer, const std::vector<std::string>& names) {
    std::vector<std::string> argv = installer;
    auto verb = std::find(argv.begin(), argv.end(), "install");
    *verb = "uninstall";
    if (argv.front() != "uv") {
        argv.insert(verb + 1, "-y");
    }
    argv.insert(argv.end(), names.begin(), names.end());
    return argv;
}

namespace {

// A dry run is refused as the change itself would be: one that would replace the running
// venvtx's own distribution, without --force.
void refuse_planned_own_change(const Context& context, const CommandOptions& options,
                               const std::vector<PackageChange>& changes) {
    std::optional<OwnDistribution> own =
        options.mutation.force ? std::nullopt : own_distribution(context.layout, context.store_root);
    for (const auto& change : changes) {
        if (own && normalize_name(change.name) == normalize_name(own->name)) {
            refuse_changing_own_distribution(*own, {own->binary}, "this " + options.kind);
        }
    }
}

// --dry-run: an install without a probe asks its installer; anything else runs in a private
// view (with the probe, if any), where it can; a run that cannot says it cannot tell.
Outcome dry_run(const Context& context, const CommandOptions& options) {
    auto versions_before = installed_versions(context.layout);
    bool with_probe = !options.mutation.probe.code.empty();
    if (options.kind == "install" && (!with_probe || options.mutation.preview == PreviewMode::never)) {
        std::vector<PackageChange> changes = installer_dry_run(context, options.argv, versions_before);
        refuse_planned_own_change(context, options, changes);
        Outcome outcome;
        outcome.dry_run = true;
        outcome.plan = command_plan_json(options.kind, options.argv, changes);
        context.out.say("would run " + command_name(options) + " as one transaction:");
        say_command_plan(context.out, outcome.plan);
        context.out.say(std::string(with_probe ? "not probed (--preview never); " : "") + "dry run: nothing changed");
        return outcome;
    }
    if (options.mutation.preview == PreviewMode::never) {
        Outcome outcome;
        outcome.dry_run = true;
        outcome.plan = command_plan_json(options.kind, options.argv, std::nullopt);
        context.out.say("would run " + command_name(options) + " as one transaction; " +
                        "what it changes is known only once it runs (--preview never); dry run: nothing changed");
        return outcome;
    }
    return run_what_if(
        context, options.mutation, command_name(options),
        [&] {
            check_exit(options, run_subprocess(command_spec(context, options)));
            return nlohmann::json{{"versions", installed_versions(context.layout)}};
        },
        [&](const nlohmann::json& change) {
            std::optional<std::vector<PackageChange>> packages;
            if (change.is_object() && change.contains("versions")) {
                packages = package_changes(versions_before, change["versions"]);
                refuse_planned_own_change(context, options, *packages);
            }
            nlohmann::json plan = command_plan_json(options.kind, options.argv, packages);
            context.out.say(command_name(options) + " in a private view:");
            say_command_plan(context.out, plan);
            return plan;
        },
        ""); // the command prints on the terminal
}

} // namespace

Outcome run_command_transaction(const Context& context, const CommandOptions& options) {
    if (options.argv.empty()) {
        throw usage_error("no command to run: venvtx run -- CMD [ARGS...]");
    }
    if (!find_program(options.argv.front(), activated_environment(context.layout)["PATH"]->c_str())) {
        throw usage_error("command not found: " + options.argv.front() + " (nothing was changed)");
    }
    refuse_prompting_command(options.argv);
    if (options.mutation.dry_run) {
        return dry_run(context, options);
    }
    // With --capture auto the overlay is the capture, probe or not; a capture asked for by name
    // is the in-place one, used without a probe (with one, where the view is refused).
    bool watched = options.capture == CaptureMode::automatic;
    bool previewing = preview_skipped(options.mutation, watched).empty();
    std::optional<bool> touch;
    if (!previewing) {
        touch = use_touch_capture(context, options); // a bad --capture is refused before the store exists
    }
    MutationSession session(context, options.mutation.wait_s);
    std::int64_t quiet_since = fs_clock_now(); // the session's own changes to the venv (its holds) are made
    Store& store = session.store();
    auto versions_before = installed_versions(context.layout);
    // A previewed command changes only its view: the scan runs beside it.
    LiveScanning live_scan(context.layout, context.store_root,
                           previewing ? std::optional(quiet_since) : std::nullopt);
    bool linked = false; // link capture links every file first, which moves every ctime: its own diff sees all
    PreviewedChange change;
    change.kind = options.kind;
    change.watched = watched;
    change.in_view = [&] {
        check_exit(options, run_subprocess(command_spec(context, options)));
        return nlohmann::json{{"versions", installed_versions(context.layout)}};
    };
    change.plan = [&](const PreviewResult& preview) {
        if (!preview.used) {
            linked = !(touch ? *touch : use_touch_capture(context, options));
            return in_place_plan(context, options, store, session.lock(), live_scan.get(), !linked);
        }
        TransactionPlan plan;
        plan.kind = options.kind;
        if (preview.change.contains("versions")) {
            plan.packages = package_changes(versions_before, preview.change["versions"]);
        }
        if (!preview.failure && !preview.probe_failed()) {
            plan.entries = read_upper_layer(preview.layer, context.layout, hidden_from_preview(context));
        }
        return plan;
    };
    change.changed_live = [&] { return changed_outside(context, store, live_scan.get(), std::nullopt); };
    Outcome outcome = run_previewed(context, options.mutation, store, change);
    if (!linked) {
        outcome = with_outside_changes(context, store, live_scan.get(), std::move(outcome));
    }
    return retain_after(context, store, std::move(outcome));
}

} // namespace venvtx
