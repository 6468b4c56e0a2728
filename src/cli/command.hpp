// What every subcommand file shares: the global options and the hook to register itself.
#pragma once

#include "venvtx/core/output.hpp"
#include "venvtx/ops/config.hpp"
#include "venvtx/txn/context.hpp"

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace venvtx::cli {

struct GlobalOptions {
    std::optional<std::string> venv;
    std::optional<std::string> store;
    bool json = false;
    bool quiet = false;
    bool verbose = false;
    bool no_progress = false;
    std::vector<std::string> argv;         // as typed, for the history
    std::vector<std::string> passthrough;  // everything after the first "--"
};

// A registered subcommand: run() is called when it was the one parsed; returns the exit code.
struct Command {
    CLI::App* app = nullptr;
    std::function<int(const GlobalOptions&)> run;
};

Command register_remove(CLI::App& parent);
Command register_rollback(CLI::App& parent);
Command register_log(CLI::App& parent);
Command register_show(CLI::App& parent);
Command register_probe(CLI::App& parent);
Command register_recover(CLI::App& parent);
Command register_verify(CLI::App& parent);
Command register_why(CLI::App& parent);
Command register_gc(CLI::App& parent);
Command register_install(CLI::App& parent);
Command register_run(CLI::App& parent);
Command register_sync(CLI::App& parent);
Command register_completion(CLI::App& parent);
Command register_stamp(CLI::App& parent);
Command register_watch(CLI::App& parent);
Command register_guard(CLI::App& parent);
Command register_help(CLI::App& parent);
Command register_status(CLI::App& parent);
Command register_diff(CLI::App& parent);
Command register_freeze(CLI::App& parent);
Command register_exec(CLI::App& parent);
Command register_config(CLI::App& parent);
Command register_complete(CLI::App& parent);

// What --dry-run and --force mean for one command (nullptr force: the command has none).
struct MutationHelp {
    const char* dry_run;
    const char* force;
};

// Options every mutating command takes (--probe, --probe-timeout, --gpus, ...). What they leave
// open comes from the defaults saved by `venvtx config`.
struct MutationFlags {
    std::vector<std::string> probe;
    bool no_probe = false;
    std::optional<double> probe_timeout;
    std::optional<std::string> gpus;
    bool no_baseline = false;
    bool dry_run = false;
    bool force = false;
    std::optional<double> wait;

    void add_to(CLI::App& app, const MutationHelp& help);
    // The flags over the saved defaults; a probe that does not compile in `layout`'s
    // interpreter is refused here, before anything runs.
    MutationOptions resolve(const SavedDefaults& saved, const VenvLayout& layout) const;
};

// --preview and --probe-live, shared by remove, install, run and rollback.
struct PreviewFlags {
    std::optional<std::string> preview;
    bool probe_live = false;

    void add_to(CLI::App& app);
    // Sets the preview options (--preview, else the saved one, else auto); a bad value is a
    // usage Error.
    void apply_to(MutationOptions& options, const SavedDefaults& saved) const;
};

// --capture and --copy, shared by install and run.
struct CaptureFlags {
    std::string capture = "auto";
    bool copy = false;

    void add_to(CLI::App& app);
};

// Validators whose messages a person can read, each with its range (never silently clamped).
extern const CLI::Validator k_timeout;   // seconds above 0, at most a week
extern const CLI::Validator k_wait;      // seconds from 0 to a week
extern const CLI::Validator k_how_many;  // a whole number, 1 or more
extern const CLI::Validator k_jobs;      // a whole number from 1 to 256
extern const CLI::Validator k_count;     // a whole number, 0 or more
extern const CLI::Validator k_transaction_id;
extern const CLI::Validator k_entry_id;  // a history entry, or 0 (before the first)

Output make_output(const GlobalOptions& global);
// Finds the venv and store named by the global options.
Context make_context(const GlobalOptions& global, const Output& out);
// The first line of a mutating command: the venv it acts on, and how it was found (as uv's
// "Using ... environment at"); dropped under --json and -q.
void say_venv(const Output& out, const Context& context);
// Prints an outcome (human verdict already said; the JSON document here) and returns its code.
int finish(const Output& out, const Outcome& outcome);

} // namespace venvtx::cli
