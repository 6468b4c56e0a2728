// Running a child process in its own process group, with captured output and a timeout that
// kills the whole group.
#pragma once

#include "venvtx/core/mutation_trap.hpp"

#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace venvtx {

struct SubprocessSpec {
    std::vector<std::string> argv;
    // Variables to set (or, with an empty optional, unset) on top of this process's environment.
    std::map<std::string, std::optional<std::string>> env;
    std::optional<std::chrono::milliseconds> timeout;
    // Give the child a pipe on fd 3 and return what it writes there (a side channel for reports).
    bool report_pipe = false;
    // Let the child inherit stdout/stderr instead of capturing them.
    bool inherit_output = false;
    // Watch the command's file changes: `on_change` sees each trapped call before it runs, for
    // as long as the command or any process it started runs (see mutation_trap.hpp).
    MutationTrap* trap = nullptr;
    ChangeHandler on_change;
    // When the child exits, kill every process it started (its group, and orphans handed to
    // venvtx as subreaper, `setsid` ones included) and stop reading pipes they may still hold.
    bool kill_descendants = false;
};

struct SubprocessResult {
    int exit_code = -1;     // exit status, or 128+signal when killed by a signal
    bool timed_out = false;
    std::string out;
    std::string err;
    std::string report;     // what the child wrote on fd 3
    double duration_s = 0;
};

// SIGINT, SIGTERM and SIGHUP go to the running child's process group (the child ends, and the
// transaction restores as for any failed command); with no child running they end venvtx as
// a crash would, which `recover` undoes. Call once, from main.
void forward_interrupts_to_children();
// The signal last forwarded to a child (0: none): a probe that ended because the user pressed
// Ctrl-C says nothing about the venv.
int forwarded_interrupt();
// A forked worker's own process group (core/worker) gets them too while it runs, so that Ctrl-C
// during a preview ends its command and probe, and venvtx says so, instead of dying silently.
void forward_interrupts_to_group(pid_t group);
void stop_forwarding_to_group(pid_t group);
// In a forked worker: the groups its parent forwards to are not its own.
void forget_worker_groups();

// Starts `argv` in a new session, not waited for (it outlives this process); output discarded.
void spawn_detached(const std::vector<std::string>& argv);

// Whether `name` can be executed as execvp would find it (a path, or a name on $PATH).
bool find_program(const std::string& name, const char* path = std::getenv("PATH"));

// Ends venvtx by `signal`, as the command it ran was ended (a shell then says "Segmentation
// fault", Python sees -11), without a core file of venvtx's own. Returns only for a signal
// whose default is not to end a process.
void end_by_signal(int signal);

// Throws Error when no process can be made (pipe, fork); a program that cannot be executed
// shows as exit code 127, as in a shell.
SubprocessResult run_subprocess(const SubprocessSpec& spec);

} // namespace venvtx
