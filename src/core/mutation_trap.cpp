// MutationTrap: the seccomp filter (user notification), its listener, and serving trapped calls.
#include "venvtx/core/mutation_trap.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/core/trapped_call.hpp"
#include "venvtx/core/unique_fd.hpp"

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace venvtx {

namespace {

constexpr std::uint32_t k_x32_bit = 0x40000000;

sock_filter statement(std::uint16_t code, std::uint32_t k) { return BPF_STMT(code, k); }
sock_filter jump(std::uint16_t code, std::uint32_t k, std::uint8_t if_true, std::uint8_t if_false) {
    return BPF_JUMP(code, k, if_true, if_false);
}
sock_filter load(std::size_t offset) { return statement(BPF_LD | BPF_W | BPF_ABS, static_cast<std::uint32_t>(offset)); }
sock_filter answer(std::uint32_t action) { return statement(BPF_RET | BPF_K, action); }
std::uint32_t refuse(int err) { return SECCOMP_RET_ERRNO | (static_cast<std::uint32_t>(err) & SECCOMP_RET_DATA); }

// Another ABI (i386, x32) is refused; open/openat trap only with a writing flag; the rest of
// the file-changing calls always trap; io_uring (which bypasses seccomp) is refused.
const std::vector<sock_filter>& filter_program() {
    static const std::vector<sock_filter> program = [] {
        std::vector<sock_filter> p;
        p.push_back(load(offsetof(seccomp_data, arch)));
        p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
        p.push_back(answer(refuse(ENOSYS)));
        p.push_back(load(offsetof(seccomp_data, nr)));
        p.push_back(jump(BPF_JMP | BPF_JGE | BPF_K, k_x32_bit, 0, 1));
        p.push_back(answer(refuse(ENOSYS)));
        const std::uint32_t writing = O_WRONLY | O_RDWR | O_TRUNC | O_CREAT;
        for (auto [number, flags_arg] : {std::pair{SYS_open, 1}, std::pair{SYS_openat, 2}}) {
            p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(number), 0, 4));
            p.push_back(load(offsetof(seccomp_data, args) + sizeof(std::uint64_t) * flags_arg));
            p.push_back(jump(BPF_JMP | BPF_JSET | BPF_K, writing, 0, 1));
            p.push_back(answer(SECCOMP_RET_USER_NOTIF));
            p.push_back(answer(SECCOMP_RET_ALLOW));
        }
        for (int number : trapped_syscalls()) {
            p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(number), 0, 1));
            p.push_back(answer(SECCOMP_RET_USER_NOTIF));
        }
        p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_io_uring_setup, 0, 1));
        p.push_back(answer(refuse(ENOSYS)));
        p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_open_by_handle_at, 0, 1));
        p.push_back(answer(refuse(EPERM)));
        p.push_back(answer(SECCOMP_RET_ALLOW));
        return p;
    }();
    return program;
}

// Returns the listener descriptor, or -1 (errno set).
int install_filter() {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        return -1;
    }
    const auto& program = filter_program();
    sock_fprog fprog{static_cast<unsigned short>(program.size()), const_cast<sock_filter*>(program.data())};
    return static_cast<int>(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &fprog));
}

// One byte carrying one descriptor (SCM_RIGHTS) over the socket pair.
struct DescriptorMessage {
    char byte = 'l';
    iovec data{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr header{};

    DescriptorMessage() {
        header.msg_iov = &data;
        header.msg_iovlen = 1;
        header.msg_control = control;
        header.msg_controllen = sizeof control;
    }
    DescriptorMessage(const DescriptorMessage&) = delete;
    DescriptorMessage& operator=(const DescriptorMessage&) = delete;

    void attach(int fd) {
        cmsghdr* part = CMSG_FIRSTHDR(&header);
        part->cmsg_level = SOL_SOCKET;
        part->cmsg_type = SCM_RIGHTS;
        part->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(part), &fd, sizeof fd);
    }
};

} // namespace

bool MutationTrap::supported() {
    static const bool answer = [] {
#if defined(__x86_64__)
        filter_program(); // built before fork: the child only installs it
        pid_t pid = ::fork();
        if (pid < 0) {
            return false;
        }
        if (pid == 0) {
            ::_exit(install_filter() >= 0 ? 0 : 1);
        }
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        return WIFEXITED(status) && WEXITSTATUS(status) == 0;
#else
        return false;
#endif
    }();
    return answer;
}

MutationTrap::MutationTrap() {
    filter_program();
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, m_socket) != 0) {
        throw system_error("socketpair", errno);
    }
}

MutationTrap::~MutationTrap() {
    close_fd(m_socket[0]);
    close_fd(m_socket[1]);
    close_fd(m_listener);
}

void MutationTrap::install_in_child() noexcept {
    int listener = install_filter();
    if (listener < 0) {
        ::_exit(126);
    }
    DescriptorMessage message;
    message.attach(listener);
    if (::sendmsg(m_socket[1], &message.header, 0) != 1) {
        ::_exit(126);
    }
    ::close(listener);
}

void MutationTrap::receive_listener() {
    close_fd(m_socket[1]);
    DescriptorMessage message;
    ssize_t got = 0;
    while ((got = ::recvmsg(m_socket[0], &message.header, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
    }
    cmsghdr* header = got == 1 ? CMSG_FIRSTHDR(&message.header) : nullptr;
    if (!header || header->cmsg_type != SCM_RIGHTS) {
        throw Error(ExitCode::internal, "the command could not be watched (seccomp refused in the child)");
    }
    std::memcpy(&m_listener, CMSG_DATA(header), sizeof m_listener);
    close_fd(m_socket[0]);
}

// The call goes on in the kernel (CONTINUE) once its pre-images are kept: the kernel reads its
// arguments again and checks them with the command's credentials, LSMs, Landlock domain,
// seccomp filters, namespaces, root, working directory and descriptors. A path another thread
// flipped meanwhile is found by the check after the command (capture/live_changes).
void MutationTrap::serve_one(const ChangeHandler& handler) {
    seccomp_notif request{};
    if (::ioctl(m_listener, SECCOMP_IOCTL_NOTIF_RECV, &request) != 0) {
        return; // the caller died, or was interrupted, before we read it
    }
    ++m_served;
    seccomp_notif_resp response{};
    response.id = request.id;
    response.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    try {
        TrappedCall call{static_cast<pid_t>(request.pid), request.data.nr, {}};
        for (int i = 0; i < 6; ++i) {
            call.args[static_cast<size_t>(i)] = request.data.args[i];
        }
        std::vector<PendingChange> changes = decode_call(call);
        // The memory we read was the caller's only if it is still stopped in this call.
        if (::ioctl(m_listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &request.id) != 0) {
            return;
        }
        if (!changes.empty()) {
            handler(changes);
        }
    } catch (const std::exception& error) {
        if (::ioctl(m_listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &request.id) != 0) {
            return; // the caller is gone: nothing of it to capture
        }
        if (!m_failure) {
            m_failure = error.what();
        }
        response.flags = 0;
        response.error = dynamic_cast<const RefusedChange*>(&error) ? -EPERM : -EIO;
    }
    ::ioctl(m_listener, SECCOMP_IOCTL_NOTIF_SEND, &response);
}

} // namespace venvtx
