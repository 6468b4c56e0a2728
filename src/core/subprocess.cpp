// run_subprocess: fork/exec into a new process group, poll its pipes, kill the group on timeout
// (or, through its watchdog, when venvtx dies first).
#include "venvtx/core/subprocess.hpp"

#include "venvtx/core/descendants.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/group_watchdog.hpp"
#include "venvtx/core/unique_fd.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace venvtx {

namespace {

constexpr size_t k_capture_limit = 4 << 20;

volatile sig_atomic_t g_child_group = 0;
volatile sig_atomic_t g_forwarded = 0;
constexpr int k_worker_slots = 16;
volatile sig_atomic_t g_worker_groups[k_worker_slots] = {}; // forked workers' groups, 0: free

void forward_interrupt(int signal) {
    bool forwarded = false;
    for (int i = 0; i < k_worker_slots; ++i) {
        if (g_worker_groups[i] > 0) {
            ::kill(-g_worker_groups[i], signal);
            forwarded = true;
        }
    }
    if (g_child_group > 0) {
        ::kill(-g_child_group, signal);
        forwarded = true;
    }
    if (forwarded) {
        g_forwarded = signal;
        return;
    }
    ::signal(signal, SIG_DFL);
    ::raise(signal);
}

struct Pipe {
    int read = -1;
    int write = -1;
};

Pipe make_pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        throw system_error("pipe", errno);
    }
    return {fds[0], fds[1]};
}

// In the child: dup `fd` to `target` (clearing close-on-exec) or exit.
void move_fd(int fd, int target) {
    if (fd == target) {
        ::fcntl(fd, F_SETFD, 0);
    } else if (::dup2(fd, target) < 0) {
        ::_exit(127);
    }
}

[[noreturn]] void exec_child(const SubprocessSpec& spec, const Pipe& out, const Pipe& err,
                             const Pipe& report) {
    ::setpgid(0, 0);
    int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    move_fd(devnull, 0);
    if (!spec.inherit_output) {
        move_fd(out.write, 1);
        move_fd(err.write, 2);
    }
    if (spec.report_pipe) {
        move_fd(report.write, 3);
    }
    // A killed venvtx never leaves its command changing the venv (what the command starts in
    // its group: group_watchdog.hpp).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (spec.trap) {
        spec.trap->install_in_child(); // from here on, each change waits for the parent
    }
    // Nothing else of ours (locks, the index, a caller's descriptors) leaks into the child.
    ::close_range(spec.report_pipe ? 4 : 3, ~0U, 0);
    for (const auto& [name, value] : spec.env) {
        if (value) {
            ::setenv(name.c_str(), value->c_str(), 1);
        } else {
            ::unsetenv(name.c_str());
        }
    }
    std::vector<char*> argv;
    for (const auto& arg : spec.argv) {
        argv.push_back(const_cast<char*>(arg.c_str()));
    }
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
}

} // namespace

void forward_interrupts_to_children() {
    struct sigaction action {};
    action.sa_handler = forward_interrupt;
    sigemptyset(&action.sa_mask);
    for (int signal : {SIGINT, SIGTERM, SIGHUP}) {
        ::sigaction(signal, &action, nullptr);
    }
}

int forwarded_interrupt() {
    return g_forwarded;
}

void forward_interrupts_to_group(pid_t group) {
    for (int i = 0; i < k_worker_slots; ++i) {
        if (g_worker_groups[i] == 0) {
            g_worker_groups[i] = group;
            return;
        }
    }
}

void forget_worker_groups() {
    for (int i = 0; i < k_worker_slots; ++i) {
        g_worker_groups[i] = 0;
    }
}

void stop_forwarding_to_group(pid_t group) {
    for (int i = 0; i < k_worker_slots; ++i) {
        if (g_worker_groups[i] == group) {
            g_worker_groups[i] = 0;
        }
    }
}

bool find_program(const std::string& name, const char* path) {
    if (name.empty()) {
        return false;
    }
    if (name.find('/') != std::string::npos) {
        return ::access(name.c_str(), X_OK) == 0;
    }
    std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    for (std::size_t start = 0; start <= dirs.size();) {
        std::size_t end = dirs.find(':', start);
        end = end == std::string::npos ? dirs.size() : end;
        std::string dir = dirs.substr(start, end - start);
        std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0) {
            return true;
        }
        start = end + 1;
    }
    return false;
}

void end_by_signal(int signal) {
    rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    struct sigaction fallback {};
    fallback.sa_handler = SIG_DFL;
    ::sigaction(signal, &fallback, nullptr);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, signal);
    ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
    ::kill(::getpid(), signal);
}

void spawn_detached(const std::vector<std::string>& argv) {
    pid_t pid = ::fork();
    if (pid < 0) {
        throw system_error("fork", errno);
    }
    if (pid == 0) {
        ::setsid();
        if (::fork() != 0) {
            ::_exit(0); // the grandchild is reparented: nobody waits for it
        }
        int devnull = ::open("/dev/null", O_RDWR);
        ::dup2(devnull, 0);
        ::dup2(devnull, 1);
        ::dup2(devnull, 2);
        ::close_range(3, ~0U, 0);
        std::vector<char*> args;
        for (const auto& arg : argv) {
            args.push_back(const_cast<char*>(arg.c_str()));
        }
        args.push_back(nullptr);
        ::execvp(args[0], args.data());
        ::_exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
}

SubprocessResult run_subprocess(const SubprocessSpec& spec) {
    if (spec.argv.empty()) {
        throw Error(ExitCode::internal, "run_subprocess: empty command");
    }
    Pipe out = make_pipe();
    Pipe err = make_pipe();
    Pipe report = spec.report_pipe ? make_pipe() : Pipe{};
    if (spec.kill_descendants) {
        become_subreaper();
    }
    GroupWatchdog watchdog;
    auto started = std::chrono::steady_clock::now();
    // A Ctrl-C between the fork and the child's group being known would end venvtx by the
    // signal (nothing to forward it to) while the child runs on: it waits until then.
    sigset_t interrupts, before;
    sigemptyset(&interrupts);
    for (int signal : {SIGINT, SIGTERM, SIGHUP}) {
        sigaddset(&interrupts, signal);
    }
    ::pthread_sigmask(SIG_BLOCK, &interrupts, &before);
    pid_t pid = ::fork();
    int fork_error = errno;
    if (pid == 0) {
        ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
        exec_child(spec, out, err, report);
    }
    if (pid > 0) {
        ::setpgid(pid, pid);
        g_child_group = pid;
    }
    ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
    if (pid < 0) {
        throw system_error("fork", fork_error);
    }
    close_fd(out.write);
    close_fd(err.write);
    close_fd(report.write);
    int status = 0;
    auto reap = [&] {
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        g_child_group = 0;
    };
    if (!watchdog.guard(pid)) {
        int error = errno;
        ::kill(-pid, SIGKILL);
        reap();
        throw system_error("fork", error);
    }
    // Watching: the loop also serves trapped calls, and runs until the child has exited.
    int child_exit = -1;
    if (spec.trap) {
        try {
            spec.trap->receive_listener();
        } catch (const Error&) {
            reap();
            throw;
        }
    }
    if (spec.trap || spec.kill_descendants) {
        child_exit = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
        if (child_exit < 0) {
            ::kill(-pid, SIGKILL);
            reap();
            throw system_error("pidfd_open", errno);
        }
    }
    bool reaped = false;

    SubprocessResult result;
    std::string* sinks[3] = {&result.out, &result.err, &result.report};
    int fds[3] = {out.read, err.read, report.read};
    bool killed = false;
    for (;;) {
        pollfd polls[5];
        int count = 0;
        int index_of[5];
        for (int i = 0; i < 3; ++i) {
            if (fds[i] >= 0) {
                polls[count] = {fds[i], POLLIN, 0};
                index_of[count++] = i;
            }
        }
        if (count == 0 && child_exit < 0) {
            break;
        }
        if (spec.trap) {
            polls[count] = {spec.trap->listener(), POLLIN, 0};
            index_of[count++] = 3;
        }
        if (child_exit >= 0) {
            polls[count] = {child_exit, POLLIN, 0};
            index_of[count++] = 4;
        }
        int wait_ms = killed ? 2000 : reaped && spec.kill_descendants ? 200 : -1;
        if (spec.timeout && !killed && !reaped) {
            auto elapsed = std::chrono::steady_clock::now() - started;
            auto left = *spec.timeout - std::chrono::duration_cast<std::chrono::milliseconds>(elapsed);
            wait_ms = left.count() > 0 ? static_cast<int>(left.count()) : 0;
        }
        int ready = ::poll(polls, static_cast<nfds_t>(count), wait_ms);
        if (ready < 0 && errno == EINTR) {
            continue;
        }
        if (ready == 0 && (killed || reaped)) {
            break; // a member escaped the group and holds the pipes: stop reading
        }
        if (ready == 0) {
            // Timeout: kill the whole group; the pipes close once every member is gone.
            ::kill(-pid, SIGKILL);
            killed = true;
            result.timed_out = true;
            continue;
        }
        for (int k = 0; k < count; ++k) {
            if (polls[k].revents == 0) {
                continue;
            }
            int i = index_of[k];
            if (i == 3) {
                if (polls[k].revents & POLLIN) {
                    spec.trap->serve_one(spec.on_change);
                }
                continue;
            }
            if (i == 4) {
                reap();
                reaped = true;
                close_fd(child_exit);
                if (spec.kill_descendants) {
                    ::kill(-pid, SIGKILL);
                    watchdog.dismiss(); // one of the orphans killed next, else
                    kill_orphaned_descendants();
                }
                continue;
            }
            char buffer[65536];
            ssize_t n = ::read(fds[i], buffer, sizeof buffer);
            if (n <= 0) {
                close_fd(fds[i]);
            } else if (sinks[i]->size() < k_capture_limit) {
                sinks[i]->append(buffer, static_cast<size_t>(n));
            }
        }
    }
    close_fd(child_exit);
    if (!reaped) {
        reap();
    }
    if (killed) {
        ::kill(-pid, SIGKILL);
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.duration_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return result;
}

} // namespace venvtx
