// user_name and host_name.
#include "venvtx/core/identity.hpp"

#include <climits>
#include <pwd.h>
#include <unistd.h>
#include <vector>

namespace venvtx {

std::string user_name() {
    uid_t uid = ::geteuid();
    struct passwd entry {};
    struct passwd* found = nullptr;
    std::vector<char> buffer(16384);
    if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr) {
        return found->pw_name;
    }
    return std::to_string(uid);
}

std::string host_name() {
    char name[HOST_NAME_MAX + 1] = {};
    if (::gethostname(name, sizeof name - 1) != 0) {
        return "";
    }
    return name;
}

} // namespace venvtx
