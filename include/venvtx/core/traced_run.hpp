// A command run in the foreground (in this process group, with this process's stdin, stdout and
// stderr) while the files its process tree maps under a directory are collected: from
// /proc/<pid>/maps at each process's exit, where ptrace stops it with its mappings still in place
// (PTRACE_O_TRACEEXIT, following forks, clones and execs), and sampled at a low rate while it
// runs. Where ptrace is refused (a seccomp profile, Yama), or `sample_only` (a job that traces
// itself: strace, gdb, py-spy), the maps are only sampled, faster, children found by /proc. A
// process of a traced job that executes a tracer (a script's `strace -f CMD`) is let go at that
// exec and sampled from then on, it and what it starts, so it may trace its own children.
// Where the kernel allows perf events, each executable mapping is also recorded as it is made
// (MappingEvents): a library mapped just before an execve, or in a sampled job, is not missed.
// Job-control stops (SIGSTOP, Ctrl-Z) stop the job as they would untraced (PTRACE_SEIZE and
// PTRACE_LISTEN); a traced command cannot itself be traced by a debugger.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace venvtx {

struct TracedRun {
    int exit_code = -1;  // the command's exit status, or 128+signal when a signal ended it
    int signal = 0;      // the signal that ended it, if one did
    bool traced = false; // false: sampled only (ptrace refused, or not asked for)
    std::set<std::string> mapped;  // absolute paths under the directory asked for
    std::size_t processes = 0;     // processes seen (threads aside)
    double duration_s = 0;
};

// Whether `program` (a path or a name) is one that traces others: strace, gdb, py-spy, ...
bool is_tracer_program(const std::string& program);

// `env`: set (or, with an empty optional, unset) in the command's environment; `argv[0]` is
// found on its PATH. `interval`: how often the maps are sampled while it runs.
// SIGINT and SIGQUIT reach the command from the terminal; SIGTERM and SIGHUP sent to venvtx are
// passed on to it. Throws Error when no process can be made.
TracedRun run_traced(const std::vector<std::string>& argv, const std::map<std::string, std::optional<std::string>>& env,
                     const std::filesystem::path& under, std::chrono::milliseconds interval, bool sample_only);

} // namespace venvtx
