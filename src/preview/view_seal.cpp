// seal_view: the bounding set first (PR_CAPBSET_DROP needs CAP_SETPCAP, still held), then capset.
#include "venvtx/preview/view_seal.hpp"

#include "venvtx/preview/overlay_view.hpp"

#include <cerrno>
#include <cstring>
#include <linux/capability.h>
#include <string>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace venvtx {

namespace {

constexpr int k_escapes[] = {CAP_SYS_ADMIN, CAP_SYS_PTRACE};

[[noreturn]] void unsealable(const std::string& what, int err) {
    throw PreviewUnavailable("sealing the view: " + what + ": " + std::strerror(err));
}

} // namespace

void seal_view() {
    for (int cap : k_escapes) {
        if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
            unsealable("dropping capability " + std::to_string(cap) + " from the bounding set", errno);
        }
    }
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
    if (::syscall(SYS_capget, &header, data) != 0) {
        unsealable("capget", errno);
    }
    for (int cap : k_escapes) {
        std::uint32_t bit = 1u << (cap % 32);
        auto& word = data[cap / 32];
        word.effective &= ~bit;
        word.permitted &= ~bit;
        word.inheritable &= ~bit;
    }
    if (::syscall(SYS_capset, &header, data) != 0) {
        unsealable("capset", errno);
    }
    ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
}

} // namespace venvtx
