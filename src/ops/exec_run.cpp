// exec_tracked: state check, the traced run, then the entry.
#include "venvtx/ops/exec_run.hpp"

#include "venvtx/core/clock.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/output.hpp"
#include "venvtx/core/subprocess.hpp"
#include "venvtx/core/traced_run.hpp"
#include "venvtx/ops/history_session.hpp"
#include "venvtx/report/entry_text.hpp"
#include "venvtx/state/observe.hpp"
#include "venvtx/state/state_index.hpp"
#include "venvtx/venv/record.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>
#include <unistd.h>

namespace venvtx {

namespace {

namespace stdfs = std::filesystem;

constexpr double k_record_wait_s = 60; // a venvtx changing the venv as the run ends

// The mapped files by distribution ({"name", "version", "files": [venv-relative]}), per the
// RECORDs of the state the run started in; files no RECORD lists under "unowned". A RECORD is
// parsed only when its text names one of the files.
nlohmann::json mapped_by_distribution(const VenvLayout& layout, Database& db, const VenvState& state,
                                      const std::set<std::string>& mapped) {
    std::set<std::string> left;
    for (const auto& path : mapped) {
        left.insert(stdfs::path(path).lexically_relative(layout.root).string());
    }
    nlohmann::json dists = nlohmann::json::array();
    for (const auto& dist : state.dists) {
        if (left.empty()) {
            break;
        }
        auto text = dist.record.empty() ? std::nullopt : load_record_text(db, dist.record);
        std::string site = stdfs::path(dist.dist_info).parent_path().string() + "/";
        bool named = false;
        for (const auto& rel : left) {
            named = named || (rel.compare(0, site.size(), site) == 0 && text &&
                              text->find(rel.substr(site.size())) != std::string::npos);
        }
        if (!named) {
            continue;
        }
        nlohmann::json files = nlohmann::json::array();
        try {
            for (const auto& entry : parse_record(*text, dist.dist_info + "/RECORD")) {
                std::string rel = (stdfs::path(site) / entry.path).lexically_normal().string();
                if (left.erase(rel) != 0) {
                    files.push_back(rel);
                }
            }
        } catch (const Error&) { // a torn RECORD owns nothing
        }
        if (!files.empty()) {
            dists.push_back({{"name", dist.name}, {"version", dist.version}, {"files", files}});
        }
    }
    return {{"dists", dists}, {"unowned", left}};
}

// A job that traces (strace -f python ..., sudo gdb -p N, py-spy record -- python ...): venvtx
// must not hold ptrace on it, since a process has one tracer.
bool runs_a_tracer(const std::vector<std::string>& argv) {
    return std::any_of(argv.begin(), argv.end(), is_tracer_program);
}

std::string command_text(const std::vector<std::string>& argv) {
    std::string text = shell_command(nlohmann::json(argv)); // as typed, argument boundaries kept
    return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

// The run's entry, once it ended: under both locks (waiting for a venvtx that holds them), after
// any change made meanwhile is recorded as an outside entry.
std::int64_t record_run(const Context& context, const ExecOptions& options, const VenvState& before,
                        const std::string& started_at, const TracedRun& run) {
    HistorySession session(context, true, k_record_wait_s);
    Store& store = session.store();
    bool changed = session.check()->now.id != before.id;
    RecordedEntry entry;
    entry.kind = "exec";
    entry.argv = context.argv;
    entry.started_at = started_at;
    entry.finished_at = utc_now_iso8601();
    entry.state_before = before.id;
    entry.state_after = before.id;
    entry.sets_last_state = false;
    nlohmann::json details = mapped_by_distribution(context.layout, store.db(), before, run.mapped);
    details["command"] = options.argv;
    details["exit_status"] = run.exit_code;
    details["duration_s"] = run.duration_s;
    details["traced"] = run.traced;
    details["processes"] = run.processes;
    details["venv_changed"] = changed;
    details["note"] = command_text(options.argv) + " → exit " + std::to_string(run.exit_code) +
                      (changed ? "; the venv changed while it ran" : "");
    entry.details = details;
    std::int64_t id = store.history().record(entry);
    context.out.debug("run recorded as entry " + std::to_string(id) + ": " + counted(run.mapped.size(), "mapped file") +
                      " from the venv, " + counted(run.processes, "process") +
                      (run.traced ? "" : " (sampled only: not traced)"));
    return id;
}

// The user's own file, like a redirection of stdout: written whole, then renamed over FILE.
void write_record(const std::string& file, const nlohmann::json& document) {
    std::string temporary = file + ".venvtx-" + std::to_string(::getpid());
    {
        std::ofstream out(temporary, std::ios::trunc); // the user's file, outside venv and store
        out << document.dump(2) << "\n";
        if (!out.flush()) {
            throw Error(ExitCode::usage, "--record-to " + file + ": cannot write " + temporary);
        }
    }
    if (std::rename(temporary.c_str(), file.c_str()) != 0) {
        std::remove(temporary.c_str());
        throw Error(ExitCode::usage, "--record-to " + file + ": " + std::strerror(errno));
    }
}

} // namespace

int exec_tracked(const Context& context, const ExecOptions& options) {
    if (options.argv.empty()) {
        throw usage_error("no command to run: venvtx exec -- CMD [ARGS...]");
    }
    auto env = activated_environment(context.layout); // as `activate`, `uv run`, `conda run` do
    if (!find_program(options.argv.front(), env["PATH"]->c_str())) {
        throw usage_error("command not found: " + options.argv.front());
    }
    VenvState before;
    {
        HistorySession session(context, true); // records an outside change first; locks released after
        before = session.check()->now;
    }
    std::string started_at = utc_now_iso8601();
    auto interval = std::chrono::milliseconds(static_cast<long>(options.sample_s * 1000));
    bool sample_only = !options.trace || runs_a_tracer(options.argv);
    TracedRun run = run_traced(options.argv, env, context.layout.root, interval, sample_only);
    nlohmann::json record = {{"schema_version", k_json_schema_version}, {"entry", nullptr},
                             {"exit_status", run.exit_code}};
    try {
        record["entry"] = record_run(context, options, before, started_at, run);
    } catch (const Error& error) { // the command's status stays the answer; the record is what is lost
        std::cerr << "venvtx: the run was not recorded: " << error.what() << std::endl;
    }
    if (!options.record_to.empty()) {
        try {
            write_record(options.record_to, record);
        } catch (const Error& error) {
            std::cerr << "venvtx: " << error.what() << std::endl;
        }
    }
    if (run.signal != 0) {
        end_by_signal(run.signal); // a job killed by a signal ends venvtx the same way
    }
    return run.exit_code;
}

} // namespace venvtx
