// The pieces scan_live and changes_since share.
#include "live_walk.hpp"

#include "venvtx/core/confinement.hpp"

#include <algorithm>
#include <atomic>
#include <dirent.h>
#include <fcntl.h>
#include <string_view>
#include <thread>

namespace venvtx::live {

namespace {

std::int64_t nanoseconds(const struct timespec& time) {
    return static_cast<std::int64_t>(time.tv_sec) * 1'000'000'000 + time.tv_nsec;
}

NodeType type_of(mode_t mode) {
    return S_ISDIR(mode) ? NodeType::dir : S_ISREG(mode) ? NodeType::file
                                         : S_ISLNK(mode) ? NodeType::symlink : NodeType::special;
}

} // namespace

LiveNode node_of(const struct stat& st) {
    return {type_of(st.st_mode), st.st_ino, nanoseconds(st.st_ctim), st.st_nlink,
            static_cast<mode_t>(st.st_mode & 07777), static_cast<std::int64_t>(st.st_size), nanoseconds(st.st_mtim)};
}

std::string joined(const std::string& rel_dir, const std::string& name) {
    return rel_dir.empty() ? name : rel_dir + "/" + name;
}

std::vector<Listed> list_dir(int fd, const std::string& rel_dir, const std::string& store_name) {
    std::vector<Listed> names;
    alignas(dirent64) char buffer[32768];
    for (;;) {
        ssize_t got = ::getdents64(fd, buffer, sizeof buffer);
        if (got <= 0) {
            break; // the end, or a directory removed while it was read
        }
        for (ssize_t at = 0; at < got;) {
            const auto* entry = reinterpret_cast<const dirent64*>(buffer + at);
            at += entry->d_reclen;
            std::string_view name = entry->d_name;
            if (name == "." || name == ".." || (rel_dir.empty() && (name == ".lock" || name == store_name))) {
                continue;
            }
            names.push_back({std::string(name), entry->d_type});
        }
    }
    std::sort(names.begin(), names.end(), [](const Listed& a, const Listed& b) { return a.name < b.name; });
    return names;
}

std::string store_name_in(const VenvLayout& layout, const std::filesystem::path& store_root) {
    return store_root.parent_path() == layout.root ? store_root.filename().string() : "";
}

int open_below(const std::filesystem::path& root, const std::string& rel) {
    try {
        ParentDir parent = Confinement::instance().open_parent(root / rel);
        return ::openat(parent.dir.get(), parent.leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    } catch (const std::exception&) {
        return -1;
    }
}

std::size_t worker_count() {
    return std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 8);
}

void on_workers(std::size_t count, const std::function<void(std::size_t worker, std::size_t i)>& work) {
    std::atomic<std::size_t> taken{0};
    std::vector<std::thread> threads;
    for (std::size_t w = 0; w < worker_count(); ++w) {
        threads.emplace_back([&, w] {
            for (std::size_t i = taken++; i < count; i = taken++) {
                work(w, i);
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
}

} // namespace venvtx::live
