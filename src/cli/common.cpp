// Shared CLI plumbing: mutation flags, output, context, and printing outcomes.
#include "command.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/progress.hpp"
#include "venvtx/probe/probe_syntax.hpp"
#include "venvtx/report/transaction_text.hpp"
#include "venvtx/txn/preview.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace venvtx::cli {

namespace {

constexpr double k_week_s = 7 * 24 * 3600;

// Seconds above 0 (or, `zero_too`, 0 or more), at most a week: a larger figure is a typo, and
// past it the clocks' arithmetic overflows.
CLI::Validator seconds_validator(bool zero_too) {
    return CLI::Validator(
        [zero_too](std::string& text) {
            char* end = nullptr;
            errno = 0;
            double value = std::strtod(text.c_str(), &end);
            bool number = end != text.c_str() && *end == '\0' && errno != ERANGE && std::isfinite(value);
            return number && (value > 0 || (zero_too && value == 0)) && value <= k_week_s
                       ? std::string()
                       : std::string("must be a number of seconds ") + (zero_too ? "from 0" : "above 0") +
                             " to 604800 (a week), not '" + text + "'";
        },
        zero_too ? "SECONDS>=0" : "SECONDS>0");
}

// `text` is a whole number from `least` to `most`, with nothing after it.
bool whole_number_in(const std::string& text, std::int64_t least, std::int64_t most) {
    std::int64_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    return error == std::errc() && end == text.data() + text.size() && value >= least && value <= most;
}

CLI::Validator whole_number_validator(std::int64_t least, std::int64_t most) {
    std::string range = std::to_string(least) + (most == std::numeric_limits<std::int64_t>::max()
                                                     ? std::string(" or more")
                                                     : " to " + std::to_string(most));
    return CLI::Validator(
        [=](std::string& text) {
            return whole_number_in(text, least, most) ? std::string()
                                                      : "must be a whole number, " + range + ", not '" + text + "'";
        },
        "N");
}

} // namespace

const CLI::Validator k_timeout = seconds_validator(false);
const CLI::Validator k_wait = seconds_validator(true);
const CLI::Validator k_how_many = whole_number_validator(1, std::numeric_limits<std::int64_t>::max());
const CLI::Validator k_jobs = whole_number_validator(1, 256);

const CLI::Validator k_count = whole_number_validator(0, std::numeric_limits<std::int64_t>::max());

const CLI::Validator k_transaction_id(
    [](std::string& text) {
        return whole_number_in(text, 1, std::numeric_limits<std::int64_t>::max())
                   ? std::string()
                   : "not a transaction id: '" + text + "'";
    },
    "TX");

const CLI::Validator k_entry_id(
    [](std::string& text) {
        return whole_number_in(text, 0, std::numeric_limits<std::int64_t>::max())
                   ? std::string()
                   : "not an entry id (0 or more, see `venvtx log`): '" + text + "'";
    },
    "N");

void PreviewFlags::add_to(CLI::App& app) {
    app.add_option("--preview", preview,
                   "auto (make the change in a private overlay view first and probe it there, where the system "
                   "allows it: install and run always unless a capture is named, the rest when there is a "
                   "probe), always, or never (change the venv in place, restore if the probe fails)");
    app.add_flag("--probe-live", probe_live, "after a previewed change is applied, probe the live venv too");
}

void PreviewFlags::apply_to(MutationOptions& options, const SavedDefaults& saved) const {
    options.preview = preview_mode_from(preview.value_or(saved.preview.value_or("auto")));
    options.probe_live = probe_live;
}

void CaptureFlags::add_to(CLI::App& app) {
    app.add_option("--capture", capture,
                   "auto (the preview's overlay where the system allows it, else touch where the kernel "
                   "allows it, else link), or in place: touch (keep each file's pre-image the moment the "
                   "command first changes it) or link (hard-link every file beforehand)");
    app.add_flag("--copy", copy, "with link capture: copy files up to 1 MiB beforehand, so in-place edits can be undone too");
}

void MutationFlags::add_to(CLI::App& app, const MutationHelp& help) {
    auto* code = app.add_option("--probe", probe,
                                "Python code run by the venv's interpreter after the change (repeatable; "
                                "default: the saved probe, see venvtx config)")
                     ->allow_extra_args(false); // one line each time: a spec that follows is not probe code
    app.add_flag("--no-probe", no_probe, "no probe, not even the saved one")->excludes(code);
    app.add_option("--probe-timeout", probe_timeout, "seconds before a probe is killed (default 300)")
        ->check(k_timeout);
    app.add_option("--gpus", gpus, "GPUs the probe must see: auto (as many as the baseline), none, or N");
    app.add_flag("--no-baseline", no_baseline, "skip the probe before the change");
    app.add_flag("--dry-run", dry_run, help.dry_run);
    if (help.force != nullptr) {
        app.add_flag("--force", force, help.force);
    }
    app.add_option("--wait", wait, "seconds to wait for another venvtx or uv holding the venv (default: exit 5 at once)")
        ->check(k_wait);
}

MutationOptions MutationFlags::resolve(const SavedDefaults& saved, const VenvLayout& layout) const {
    MutationOptions options;
    options.probe.code = no_probe ? std::vector<std::string>{} : probe.empty() ? saved.probe : probe;
    check_probe_syntax(layout, options.probe.code);
    options.probe.timeout_s = probe_timeout.value_or(saved.probe_timeout.value_or(300));
    options.probe.gpus = parse_gpu_expectation(gpus.value_or(saved.gpus.value_or("auto")));
    options.probe_declined = no_probe;
    options.no_baseline = no_baseline;
    options.dry_run = dry_run;
    options.force = force;
    options.wait_s = wait.value_or(0.0);
    return options;
}

Output make_output(const GlobalOptions& global) {
    Output out(OutputOptions{global.json, global.quiet, global.verbose, !global.no_progress});
    Progress::instance().set_enabled(out.progress_allowed());
    Progress::instance().set_timings(global.verbose);
    return out;
}

Context make_context(const GlobalOptions& global, const Output& out) {
    std::optional<std::filesystem::path> venv;
    if (global.venv) {
        venv = *global.venv;
    }
    std::optional<std::filesystem::path> store;
    const char* from_env = std::getenv("VENVTX_STORE");
    if (global.store) {
        store = *global.store;
    } else if (from_env != nullptr && *from_env != '\0') {
        store = from_env;
    }
    VenvLayout layout = find_venv(venv, store);
    Context context{layout, resolve_store_root(layout, store), out, nlohmann::json(global.argv)};
    Confinement::instance().set_roots({layout.root, context.store_root});
    out.debug("venv " + layout.root.string() + ", store " + context.store_root.string());
    if (!layout.other_venv.empty()) {
        out.warn("acting on " + layout.root.string() + " ($VIRTUAL_ENV), not " + layout.other_venv.string() +
                 " (--venv picks one)");
    }
    return context;
}

void say_venv(const Output& out, const Context& context) {
    const std::string& how = context.layout.found_by;
    out.say("venv " + context.layout.root.string() + (how.empty() ? "" : " (" + how + ")"));
}

int finish(const Output& out, const Outcome& outcome) {
    if (out.json() && !outcome.document_printed) {
        nlohmann::json document = {{"changed_outside", nlohmann::json::array()}, {"not_at_target", nullptr}};
        document.update(outcome.extra);
        document["dry_run"] = outcome.dry_run;
        document["changed"] = outcome.tx && outcome.tx->state == TxState::committed; // empty ones are not kept
        document["transaction"] = outcome.tx ? transaction_json(*outcome.tx) : nlohmann::json();
        document["plan"] = outcome.plan;
        document["what_if"] = outcome.what_if;
        out.document(document);
    } else if (out.json()) {
    } else if (out.quiet() && outcome.tx && outcome.tx->state == TxState::committed) {
        out.verdict(std::to_string(outcome.tx->id)); // -q: the id, for a script to keep
    } else if (outcome.tx && outcome.code == ExitCode::ok && outcome.tx->state == TxState::committed) {
        const auto& tx = *outcome.tx;
        std::string what = tx.kind;
        if (tx.details && tx.details->contains("undoes")) { // rollback --to: all it undid
            what = "undid tx";
            for (const auto& id : (*tx.details)["undoes"]) {
                what += (what.back() == 'x' ? " " : ", ") + std::to_string(id.get<std::int64_t>());
            }
        } else if (tx.undoes) {
            what = "undid tx " + std::to_string(*tx.undoes);
        }
        out.say("committed tx " + std::to_string(tx.id) + " (" + what + "): " +
                counted(tx.files.removed, "file") + " removed, " + std::to_string(tx.files.added) +
                " added, " + std::to_string(tx.files.modified) + " modified" + (tx.probe ? "" : ", not probed") +
                (tx.undoes ? "" : "; undo with `venvtx rollback`"));
    }
    return static_cast<int>(outcome.code);
}

} // namespace venvtx::cli
