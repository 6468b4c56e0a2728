// What every command works on: the venv, its store, the output channels, and the options
// every mutating command shares.
#pragma once

#include "venvtx/core/error.hpp"
#include "venvtx/core/output.hpp"
#include "venvtx/probe/probe.hpp"
#include "venvtx/store/history.hpp"
#include "venvtx/venv/layout.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

namespace venvtx {

struct Context {
    VenvLayout layout;
    std::filesystem::path store_root;
    const Output& out;
    nlohmann::json argv = nlohmann::json::array();
};

// --preview: make the change first in a private overlay view and probe it there (see
// txn/preview.hpp); automatic where the system allows it and a probe is given.
enum class PreviewMode { automatic, always, never };

struct MutationOptions {
    ProbeSettings probe;
    bool probe_declined = false;  // --no-probe: no probe, knowingly (a removal that breaks a library goes)
    bool no_baseline = false;
    bool dry_run = false;
    bool force = false;  // past a guard rail or a drift refusal, storing what it overwrites first
    std::optional<double> wait_s = 0.0;  // seconds to wait for the locks (0: exit 5 at once)
    PreviewMode preview = PreviewMode::automatic;
    bool probe_live = false;  // after a previewed change is applied, probe the live venv too
};

// What a command did: its exit code and, when one was recorded, the transaction; under
// --dry-run, what it would do. cli/ prints it as one document (docs/json.md, "mutation").
struct Outcome {
    ExitCode code = ExitCode::ok;
    std::optional<TransactionRecord> tx;
    bool document_printed = false;  // the command already wrote its --json document
    nlohmann::json extra = nlohmann::json::object();  // more keys of the document (changed_outside, ...)
    bool dry_run = false;
    nlohmann::json plan = nullptr;     // under --dry-run: what the change would do (packages before -> after, ...)
    nlohmann::json what_if = nullptr;  // under --dry-run with a probe: the preview's probes and verdict
};

// --store, else <venv>/.venvtx; made absolute.
std::filesystem::path resolve_store_root(const VenvLayout& layout,
                                         const std::optional<std::filesystem::path>& explicit_root);

} // namespace venvtx
