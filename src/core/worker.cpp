// Worker: fork, run, send the result over a pipe, _exit.
#include "venvtx/core/worker.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/core/subprocess.hpp"

#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <utility>

namespace venvtx {

namespace {

void write_all(int fd, const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
        ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return;
        }
        done += static_cast<std::size_t>(n);
    }
}

// The children reaped aside and not yet gone.
std::mutex g_exiting_mutex;
std::condition_variable g_exited;
int g_exiting = 0;

void reap_aside(pid_t pid) {
    {
        std::lock_guard<std::mutex> lock(g_exiting_mutex);
        ++g_exiting;
    }
    sigset_t all;
    sigset_t was;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, &was); // signals stay the main thread's
    std::thread([pid] {
        while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
        }
        std::lock_guard<std::mutex> lock(g_exiting_mutex);
        --g_exiting;
        g_exited.notify_all();
    }).detach();
    ::pthread_sigmask(SIG_SETMASK, &was, nullptr);
}

} // namespace

Worker::Worker(const std::function<std::string()>& body) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        throw system_error("pipe", errno);
    }
    pid_t parent = ::getpid();
    m_pid = ::fork();
    if (m_pid < 0) {
        int err = errno;
        ::close(fds[0]);
        ::close(fds[1]);
        throw system_error("fork", err);
    }
    if (m_pid == 0) {
        ::close(fds[0]);
        ::setpgid(0, 0);
        forget_worker_groups();
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) {
            ::_exit(1);
        }
        // First byte: '1' the body returned, '0' it threw.
        std::string message;
        try {
            message = "1";
            message += body(); // appended: g++ 12 misreads `"1" + string` (-Wrestrict)
        } catch (const std::exception& error) {
            message = std::string("0") + error.what();
        }
        write_all(fds[1], message);
        ::_exit(0);
    }
    ::close(fds[1]);
    m_read = fds[0];
    ::setpgid(m_pid, m_pid); // as the child does: a signal forwarded at once finds the group
    forward_interrupts_to_group(m_pid);
}

Worker::~Worker() {
    if (m_pid > 0) {
        kill();
    }
    if (m_read >= 0) {
        ::close(m_read);
    }
}

Worker::Result Worker::wait() {
    std::string data;
    char buffer[65536];
    for (;;) {
        ssize_t n = ::read(m_read, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        data.append(buffer, static_cast<std::size_t>(n));
    }
    stop_forwarding_to_group(m_pid);
    pid_t pid = std::exchange(m_pid, -1);
    if (!data.empty()) {
        reap_aside(pid);
        return {data.front() == '1', data.substr(1)};
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::string how = WIFSIGNALED(status) ? std::string("killed by ") + ::strsignal(WTERMSIG(status))
                                          : "exited with status " + std::to_string(WEXITSTATUS(status));
    return {false, "the worker process " + how};
}

void Worker::await_exits() {
    std::unique_lock<std::mutex> lock(g_exiting_mutex);
    g_exited.wait(lock, [] { return g_exiting == 0; });
}

void Worker::kill() {
    if (m_pid <= 0) {
        return;
    }
    ::kill(-m_pid, SIGKILL);
    ::kill(m_pid, SIGKILL);
    while (::waitpid(m_pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    stop_forwarding_to_group(m_pid);
    m_pid = -1;
}

} // namespace venvtx
