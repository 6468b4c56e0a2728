// run_traced: a ptrace event loop (exits, forks, clones, execs; never syscalls) and a sampler.
#include "venvtx/core/traced_run.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/core/file_text.hpp"
#include "venvtx/core/mapping_events.hpp"

#include <condition_variable>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <chrono>
#include <csignal>
#include <cstring>
#include <mutex>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace venvtx {

namespace {

volatile sig_atomic_t g_command = 0;

void pass_on(int signal) {
    if (g_command > 0) {
        ::kill(g_command, signal);
    }
}

// Adds a mapped file's path (as /proc/<pid>/maps or a perf record gives it) if it lies under
// `prefix` (a directory, with its '/').
void keep_if_under(std::string name, const std::string& prefix, std::set<std::string>& into) {
    if (name.compare(0, prefix.size(), prefix) != 0) {
        return;
    }
    const std::string deleted = " (deleted)";
    if (name.size() > deleted.size() && name.compare(name.size() - deleted.size(), deleted.size(), deleted) == 0) {
        name.resize(name.size() - deleted.size());
    }
    into.insert(std::move(name));
}

// Adds the paths of `pid`'s file mappings that lie under `prefix`.
void read_mappings(pid_t pid, const std::string& prefix, std::set<std::string>& into) {
    auto text = read_file_text("/proc/" + std::to_string(pid) + "/maps");
    if (!text) {
        return;
    }
    std::size_t start = 0;
    while (start < text->size()) {
        std::size_t end = text->find('\n', start);
        end = end == std::string::npos ? text->size() : end;
        std::size_t path = text->find(" /", start); // the first field that starts with '/' is the path
        if (path != std::string::npos && path < end) {
            keep_if_under(text->substr(path + 1, end - path - 1), prefix, into);
        }
        start = end + 1;
    }
}

// Whether `pid` leads its thread group (a process, not one of its threads).
bool leads_its_group(pid_t pid) {
    auto status = read_file_text("/proc/" + std::to_string(pid) + "/status");
    if (!status) {
        return false;
    }
    std::size_t at = status->find("\nTgid:");
    return at != std::string::npos && std::atoi(status->c_str() + at + 6) == pid;
}

int exit_code_of(int status) {
    return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

// How often the maps of processes venvtx does not trace are read.
constexpr std::chrono::milliseconds k_sample_only_interval(100);

// The program a process runs now, by its executable's name.
std::string program_of(pid_t pid) {
    char target[4096];
    ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), target, sizeof target - 1);
    return n > 0 ? std::filesystem::path(std::string(target, static_cast<size_t>(n))).filename().string() : "";
}

class Collector {
public:
    Collector(std::string prefix, std::chrono::milliseconds interval)
        : m_prefix(std::move(prefix)), m_interval(interval), m_sampler([this] { sample_until_done(); }) {}
    ~Collector() {
        {
            std::lock_guard<std::mutex> guard(m_mutex);
            m_done = true;
        }
        m_wake.notify_all();
        m_sampler.join();
    }
    void add(pid_t pid) {
        std::lock_guard<std::mutex> guard(m_mutex);
        m_live.insert(pid);
        m_seen.insert(pid);
    }
    void read_at_exit(pid_t pid) {
        std::set<std::string> found;
        read_mappings(pid, m_prefix, found);
        std::lock_guard<std::mutex> guard(m_mutex);
        m_mapped.insert(found.begin(), found.end());
        m_live.erase(pid);
    }
    // Processes were let go: only sampling sees them now, as often as for a job never traced.
    void sample_often() {
        std::lock_guard<std::mutex> guard(m_mutex);
        m_interval = std::min(m_interval, k_sample_only_interval);
    }
    void gone(pid_t pid) {
        std::lock_guard<std::mutex> guard(m_mutex);
        m_live.erase(pid);
    }
    std::set<std::string> mapped() {
        std::lock_guard<std::mutex> guard(m_mutex);
        return m_mapped;
    }
    std::size_t processes() {
        std::lock_guard<std::mutex> guard(m_mutex);
        return m_seen.size();
    }

private:
    void sample_until_done() {
        for (;;) {
            std::set<pid_t> live;
            {
                std::unique_lock<std::mutex> lock(m_mutex);
                if (m_wake.wait_for(lock, m_interval, [this] { return m_done; })) {
                    return;
                }
                live = m_live;
            }
            std::set<std::string> found;
            std::set<pid_t> children;
            for (pid_t pid : live) {
                read_mappings(pid, m_prefix, found);
                children_of(pid, children);
            }
            std::lock_guard<std::mutex> guard(m_mutex);
            m_mapped.insert(found.begin(), found.end());
            for (pid_t child : children) { // what ptrace did not report (sampled only, or let go)
                if (m_seen.insert(child).second) {
                    m_live.insert(child);
                }
            }
        }
    }

    static void children_of(pid_t pid, std::set<pid_t>& into) {
        auto text = read_file_text("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
        for (const char* at = text ? text->c_str() : ""; *at != '\0';) {
            char* end = nullptr;
            long child = std::strtol(at, &end, 10);
            if (end == at) {
                break;
            }
            into.insert(static_cast<pid_t>(child));
            at = end;
        }
    }

    std::string m_prefix;
    std::chrono::milliseconds m_interval;
    bool m_done = false;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::set<pid_t> m_live;
    std::set<pid_t> m_seen;
    std::set<std::string> m_mapped;
    std::thread m_sampler;
};

// The job has ended: what it left running (a `cmd &` child, a daemon) is read, then detached,
// so that it keeps running and venvtx returns with the job. Each is stopped with SIGSTOP and
// detached at that stop, the signal swallowed; whatever else it reports meanwhile is passed on.
void let_go(std::set<pid_t>& tracees, Collector& collector) {
    for (pid_t tid : tracees) {
        ::syscall(SYS_tkill, tid, SIGSTOP);
    }
    while (!tracees.empty()) {
        int status = 0;
        pid_t pid = ::waitpid(-1, &status, __WALL);
        if (pid < 0) {
            if (errno == EINTR) {
                continue;
            }
            return; // ECHILD: nothing left
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            tracees.erase(pid);
            collector.gone(pid);
            continue;
        }
        if (!WIFSTOPPED(status)) {
            continue;
        }
        int signal = WSTOPSIG(status);
        int event = status >> 16;
        if (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK || event == PTRACE_EVENT_CLONE) {
            unsigned long child = 0;
            ::ptrace(PTRACE_GETEVENTMSG, pid, nullptr, &child);
            tracees.insert(static_cast<pid_t>(child)); // detached at its first stop (PTRACE_EVENT_STOP)
        } else if ((event == 0 && signal == SIGSTOP) || event == PTRACE_EVENT_STOP) {
            if (leads_its_group(pid)) {
                collector.read_at_exit(pid);
            }
            ::ptrace(PTRACE_DETACH, pid, nullptr, nullptr);
            tracees.erase(pid);
            continue;
        }
        long deliver = event == 0 ? signal : 0;
        ::ptrace(PTRACE_CONT, pid, nullptr, reinterpret_cast<void*>(deliver));
    }
}

bool is_job_stop(int signal) {
    return signal == SIGSTOP || signal == SIGTSTP || signal == SIGTTIN || signal == SIGTTOU;
}

// The ptrace loop: returns the first process's wait status once it has ended, what it left
// running let go (-1 if it was never seen to end).
int follow(pid_t root, Collector& collector) {
    std::set<pid_t> tracees = {root};
    for (;;) {
        int status = 0;
        pid_t pid = ::waitpid(-1, &status, __WALL);
        if (pid < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1; // ECHILD: nothing left
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            collector.gone(pid);
            tracees.erase(pid);
            if (pid == root) {
                let_go(tracees, collector);
                return status;
            }
            continue;
        }
        if (!WIFSTOPPED(status)) {
            continue;
        }
        int signal = WSTOPSIG(status);
        int event = status >> 16;
        long deliver = 0;
        if (event == PTRACE_EVENT_EXIT) {
            if (leads_its_group(pid)) {
                collector.read_at_exit(pid);
            }
        } else if (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK || event == PTRACE_EVENT_CLONE) {
            unsigned long child = 0;
            ::ptrace(PTRACE_GETEVENTMSG, pid, nullptr, &child);
            tracees.insert(static_cast<pid_t>(child));
            if (event != PTRACE_EVENT_CLONE || leads_its_group(static_cast<pid_t>(child))) {
                collector.add(static_cast<pid_t>(child));
            }
        } else if (event == PTRACE_EVENT_EXEC && is_tracer_program(program_of(pid))) {
            // A tracer started inside the job: it needs its children untraced by venvtx. Let go,
            // it and what it starts are sampled (the collector still has it, and finds children).
            ::ptrace(PTRACE_DETACH, pid, nullptr, nullptr);
            tracees.erase(pid);
            collector.sample_often();
            continue;
        } else if (event == PTRACE_EVENT_STOP && is_job_stop(signal)) {
            // A group-stop (SIGSTOP, Ctrl-Z): the job stays stopped until a SIGCONT, as untraced.
            ::ptrace(PTRACE_LISTEN, pid, nullptr, nullptr);
            continue;
        } else if (event == 0) {
            deliver = signal; // a signal for the job, delivered as sent
        } // else a new tracee's first stop, or an event: resumed
        ::ptrace(PTRACE_CONT, pid, nullptr, reinterpret_cast<void*>(deliver));
    }
}

} // namespace

bool is_tracer_program(const std::string& program) {
    static const std::set<std::string> k_tracers = {"strace", "ltrace", "gdb", "gdbserver", "lldb", "rr",
                                                    "py-spy", "pystack", "austin"};
    return k_tracers.count(std::filesystem::path(program).filename().string()) != 0;
}

TracedRun run_traced(const std::vector<std::string>& argv, const std::map<std::string, std::optional<std::string>>& env,
                     const std::filesystem::path& under, std::chrono::milliseconds interval, bool sample_only) {
    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) != 0) {
        throw Error(ExitCode::internal, std::string("pipe: ") + std::strerror(errno));
    }
    auto started = std::chrono::steady_clock::now();
    struct sigaction ignore {}, forward {}, old_int {}, old_quit {}, old_term {}, old_hup {};
    ignore.sa_handler = SIG_IGN;
    forward.sa_handler = pass_on;
    pid_t pid = ::fork();
    if (pid < 0) {
        throw Error(ExitCode::internal, std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
        ::close(ready[1]);
        char go = 0;
        (void)!::read(ready[0], &go, 1); // the parent has seized it (or will only sample it)
        ::close(ready[0]);
        for (const auto& [name, value] : env) {
            if (value) {
                ::setenv(name.c_str(), value->c_str(), 1);
            } else {
                ::unsetenv(name.c_str());
            }
        }
        std::vector<char*> args;
        for (const auto& arg : argv) {
            args.push_back(const_cast<char*>(arg.c_str()));
        }
        args.push_back(nullptr);
        ::execvp(args[0], args.data());
        std::fprintf(stderr, "venvtx: cannot run %s: %s\n", args[0], std::strerror(errno));
        ::_exit(127);
    }
    ::close(ready[0]);
    auto events = MappingEvents::follow(pid); // before it runs: its first mappings are its program's
    // PTRACE_SEIZE, not TRACEME: a group-stop can then be left stopped (PTRACE_LISTEN).
    long options = PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC |
                   PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL;
    bool traced = !sample_only && ::ptrace(PTRACE_SEIZE, pid, nullptr, reinterpret_cast<void*>(options)) == 0;
    // Ctrl-C is the command's from before it runs: one between its start and these would end
    // venvtx and leave the command running.
    g_command = pid;
    ::sigaction(SIGINT, &ignore, &old_int);
    ::sigaction(SIGQUIT, &ignore, &old_quit);
    ::sigaction(SIGTERM, &forward, &old_term);
    ::sigaction(SIGHUP, &forward, &old_hup);
    (void)!::write(ready[1], "g", 1);
    ::close(ready[1]);
    TracedRun run;
    run.traced = traced;
    std::string prefix = under.string() + "/";
    {
        Collector collector(prefix, run.traced ? interval : std::min(interval, k_sample_only_interval));
        collector.add(pid);
        if (run.traced) {
            int status = follow(pid, collector);
            run.exit_code = exit_code_of(status);
            run.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        } else {
            int status = 0;
            while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            run.exit_code = exit_code_of(status);
            run.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        }
        run.mapped = collector.mapped();
        if (events) {
            for (const auto& file : events->finish()) {
                keep_if_under(file, prefix, run.mapped);
            }
        }
        run.processes = collector.processes();
    }
    g_command = 0;
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGQUIT, &old_quit, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
    ::sigaction(SIGHUP, &old_hup, nullptr);
    run.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return run;
}

} // namespace venvtx
