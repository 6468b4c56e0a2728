// exec: a tracked run of a command that uses the venv without changing it (a training job, a
// benchmark). Its stdin, stdout, stderr and exit status are the command's own; the history gets
// an `exec` entry: the state it ran against, the command, start and end, the exit status, and
// the venv's files its process tree mapped, by distribution. The locks are not held while it
// runs; a change made meanwhile is said in the entry and recorded by the next command.
#pragma once

#include "venvtx/txn/context.hpp"

#include <string>
#include <vector>

namespace venvtx {

struct ExecOptions {
    std::vector<std::string> argv;
    double sample_s = 1.0;  // how often the maps are read while it runs (and at each exit)
    // Where to write, once the run is recorded, {"schema_version", "entry", "exit_status"} (the
    // job owns stdout and stderr: a script learns its entry id here). Empty: nowhere.
    std::string record_to;
    // false (--no-trace): the maps only sampled, never ptrace; also when the job is a tracer
    // itself (strace, gdb, py-spy, ...: a process has one tracer).
    bool trace = true;
};

// Returns the command's exit status (128+signal when a signal ended it).
int exec_tracked(const Context& context, const ExecOptions& options);

} // namespace venvtx
