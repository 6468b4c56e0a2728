// resolve_for: a stopped process's path walked component by component in its own view.
#include "venvtx/core/caller_path.hpp"

#include <climits>
#include <deque>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace venvtx {

namespace {

constexpr int k_max_links = 40;  // the kernel's own limit (ELOOP past it)

std::optional<std::string> link_text(const std::string& path) {
    char buffer[PATH_MAX];
    ssize_t n = ::readlink(path.c_str(), buffer, sizeof buffer);
    if (n <= 0 || n >= static_cast<ssize_t>(sizeof buffer)) {
        return std::nullopt;
    }
    return std::string(buffer, static_cast<std::size_t>(n));
}

// What a descriptor's magic link says when it is no file: `pipe:[12]`, `anon_inode:[eventfd]`,
// or a file since deleted.
bool names_no_file(const std::string& target) {
    if (target.front() != '/') {
        return target.find(':') < target.find('/');
    }
    const std::string deleted = " (deleted)";
    struct stat st {};
    return target.size() > deleted.size() && target.compare(target.size() - deleted.size(), deleted.size(), deleted) == 0 &&
           ::lstat(target.c_str(), &st) != 0;
}

// "" stands for "/" so that a component joins as prefix + "/" + name.
std::string as_prefix(const std::string& path) {
    return path == "/" ? std::string() : path;
}

bool same_mount_namespace(pid_t pid) {
    static const ino_t own = [] {
        struct stat st {};
        return ::stat("/proc/self/ns/mnt", &st) == 0 ? st.st_ino : 0;
    }();
    struct stat st {};
    return own != 0 && ::stat(("/proc/" + std::to_string(pid) + "/ns/mnt").c_str(), &st) == 0 && st.st_ino == own;
}

// The process's root as a prefix of venvtx's paths: where it lies, in the same mount namespace;
// otherwise reached through /proc (and no path there is a venv path venvtx knows).
std::optional<std::string> root_of(pid_t pid) {
    std::string link = "/proc/" + std::to_string(pid) + "/root";
    if (!same_mount_namespace(pid)) {
        return link;
    }
    auto root = link_text(link);
    if (!root || root->front() != '/') {
        return std::nullopt;
    }
    return as_prefix(*root);
}

void push_front_parts(std::deque<std::string>& parts, const std::string& text) {
    std::deque<std::string> front;
    for (std::size_t at = 0; at <= text.size();) {
        std::size_t slash = text.find('/', at);
        std::size_t end = slash == std::string::npos ? text.size() : slash;
        front.push_back(text.substr(at, end - at));
        at = end + 1;
    }
    parts.insert(parts.begin(), front.begin(), front.end());
}

} // namespace

std::optional<std::filesystem::path> descriptor_path(pid_t pid, int fd) {
    std::string proc = "/proc/" + std::to_string(pid);
    auto target = link_text(fd == AT_FDCWD ? proc + "/cwd" : proc + "/fd/" + std::to_string(fd));
    if (!target || target->front() != '/' || names_no_file(*target)) {
        return std::nullopt;
    }
    return *target;
}

std::optional<std::filesystem::path> resolve_for(pid_t pid, const CallerPath& path) {
    if (path.text.empty()) {
        return std::nullopt;
    }
    auto root = root_of(pid);
    if (!root) {
        return std::nullopt;
    }
    std::string floor = *root;  // where `..` stops and an absolute name starts
    std::string current = floor;
    if (path.in_root || path.text.front() != '/') {
        auto base = descriptor_path(pid, path.dirfd);
        if (!base) {
            return std::nullopt; // the call fails (EBADF, ENOTDIR, ENOENT)
        }
        current = as_prefix(base->string());
        floor = path.in_root ? current : floor;
    }
    const std::string proc = "/proc/" + std::to_string(pid);
    std::deque<std::string> parts;
    push_front_parts(parts, path.text);
    int links = 0;
    while (!parts.empty()) {
        std::string part = parts.front();
        parts.pop_front();
        if (part.empty() || part == ".") {
            continue;
        }
        if (part == "..") {
            if (current.size() > floor.size()) {
                current.resize(current.rfind('/'));
            }
            continue;
        }
        std::string next = current + "/" + part;
        if (next == *root + "/proc/self") {
            next = *root + proc;
        } else if (next == *root + "/proc/thread-self") {
            next = *root + proc + "/task/" + std::to_string(pid);
        }
        struct stat st {};
        if ((parts.empty() && !path.follow) || ::lstat(next.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) {
            current = next; // a missing one is named as it is: the call makes it, or fails
            continue;
        }
        auto target = link_text(next);
        // A descriptor's (or cwd's) magic link says where its file lies as venvtx sees it.
        bool magic = next.compare(0, root->size() + 6, *root + "/proc/") == 0;
        if (++links > k_max_links || !target || (magic && names_no_file(*target))) {
            return std::nullopt;
        }
        if (target->front() == '/') {
            current = magic ? std::string() : floor;
        }
        push_front_parts(parts, *target);
    }
    return current.empty() ? std::string("/") : current;
}

} // namespace venvtx
