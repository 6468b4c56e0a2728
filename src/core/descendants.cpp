// become_subreaper / kill_orphaned_descendants: no process a probe started outlives it.
#include "venvtx/core/descendants.hpp"

#include <cerrno>
#include <csignal>
#include <dirent.h>
#include <fstream>
#include <string>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace venvtx {

namespace {

// The children of this process, from /proc/<pid>/stat (field 4 is the parent's pid).
std::vector<pid_t> children_of_self() {
    std::vector<pid_t> children;
    pid_t self = ::getpid();
    DIR* proc = ::opendir("/proc");
    if (proc == nullptr) {
        return children;
    }
    while (const dirent* entry = ::readdir(proc)) {
        char* end = nullptr;
        long pid = std::strtol(entry->d_name, &end, 10);
        if (*end != '\0' || pid <= 0) {
            continue;
        }
        std::ifstream stat("/proc/" + std::string(entry->d_name) + "/stat");
        std::string line;
        std::getline(stat, line);
        auto close_paren = line.rfind(')');
        if (close_paren == std::string::npos) {
            continue;
        }
        char state = 0;
        long parent = 0;
        if (std::sscanf(line.c_str() + close_paren + 1, " %c %ld", &state, &parent) == 2 &&
            parent == self) {
            children.push_back(static_cast<pid_t>(pid));
        }
    }
    ::closedir(proc);
    return children;
}

} // namespace

void become_subreaper() {
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
}

void kill_orphaned_descendants() {
    for (int round = 0; round < 64; ++round) {
        std::vector<pid_t> children = children_of_self();
        if (children.empty()) {
            return;
        }
        for (pid_t child : children) {
            ::kill(child, SIGKILL);
        }
        for (pid_t child : children) {
            while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
            }
        }
    }
}

} // namespace venvtx
