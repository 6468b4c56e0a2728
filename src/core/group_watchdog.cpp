// GroupWatchdog: a forked helper that kills a command's group when venvtx dies before it.
#include "venvtx/core/group_watchdog.hpp"

#include "venvtx/core/error.hpp"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace venvtx {

namespace {

// In the helper, forked from a process that may have threads: async-signal-safe calls only.
[[noreturn]] void watch(int socket, pid_t group) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
        ::sigaction(signal, &ignore, nullptr); // Ctrl-C reaches venvtx's group: venvtx decides
    }
    if (socket != 3) {
        ::dup2(socket, 3);
    }
    int devnull = ::open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd) {
        ::dup2(devnull, fd); // a caller waiting for venvtx's output does not wait for the helper
    }
    ::close_range(4, ~0U, 0); // no lock, pipe or index of venvtx's kept open here
    (void)!::chdir("/");
    char word = 0;
    ssize_t got = 0;
    while ((got = ::read(3, &word, 1)) < 0 && errno == EINTR) {
    }
    if (got == 0) {
        ::kill(-group, SIGKILL);
    }
    ::_exit(0);
}

} // namespace

GroupWatchdog::GroupWatchdog() {
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, m_ends) != 0) {
        throw system_error("socketpair", errno);
    }
}

bool GroupWatchdog::guard(pid_t group) {
    pid_t pid = ::fork();
    if (pid == 0) {
        ::close(m_ends[0]);
        watch(m_ends[1], group);
    }
    if (pid < 0) {
        return false;
    }
    m_helper = pid;
    ::close(m_ends[1]);
    m_ends[1] = -1;
    return true;
}

GroupWatchdog::~GroupWatchdog() {
    dismiss();
}

void GroupWatchdog::dismiss() {
    if (m_helper > 0) {
        (void)!::send(m_ends[0], "d", 1, MSG_NOSIGNAL);
    }
    for (int& end : m_ends) {
        if (end >= 0) {
            ::close(end);
            end = -1;
        }
    }
    if (m_helper > 0) {
        while (::waitpid(m_helper, nullptr, 0) < 0 && errno == EINTR) {
        }
        m_helper = -1;
    }
}

} // namespace venvtx
