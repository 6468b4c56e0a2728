// PathResolver: containment checks for RECORD paths, with a cache of resolved directories.
#include "venvtx/venv/path_resolver.hpp"

#include "venvtx/core/error.hpp"

#include <climits>
#include <cstdlib>
#include <sys/stat.h>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

// `path` lies strictly below `dir`; both lexically normal, absolute, without a trailing '/'.
bool is_below(std::string_view path, std::string_view dir) {
    return path.size() > dir.size() + 1 && path.compare(0, dir.size(), dir) == 0 &&
           (path[dir.size()] == '/' || dir == "/");
}

std::string normal_string(const stdfs::path& path) {
    std::string text = path.lexically_normal().string();
    while (text.size() > 1 && text.back() == '/') {
        text.pop_back();
    }
    return text;
}

// A relative path without "", "." or ".." components: joining it to a normal directory is normal.
bool is_plain_relative(std::string_view path) {
    if (path.empty() || path.front() == '/') {
        return false;
    }
    size_t start = 0;
    while (start <= path.size()) {
        size_t end = path.find('/', start);
        std::string_view part = path.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
        if (part.empty() || part == "." || part == "..") {
            return false;
        }
        if (end == std::string_view::npos) {
            return true;
        }
        start = end + 1;
    }
    return false;
}

} // namespace

PathResolver::PathResolver(const VenvLayout& layout, const stdfs::path& store_root)
    : m_root(normal_string(layout.root)), m_store(normal_string(store_root)) {}

// Like realpath(3), built on the parent's cached answer: one lstat per directory, and a full
// realpath only where a component is a symlink.
std::optional<std::string> PathResolver::canonical_dir(const std::string& dir) {
    auto found = m_dir_cache.find(dir);
    if (found != m_dir_cache.end()) {
        return found->second;
    }
    std::optional<std::string> result;
    size_t slash = dir.rfind('/');
    std::optional<std::string> parent =
        slash == std::string::npos || dir == "/" ? std::nullopt : canonical_dir(slash == 0 ? "/" : dir.substr(0, slash));
    struct stat st {};
    if (!parent) {
        char buffer[PATH_MAX];
        if (::realpath(dir.c_str(), buffer) != nullptr) {
            result = std::string(buffer);
        }
    } else if (std::string candidate = (*parent == "/" ? "" : *parent) + dir.substr(slash);
               ::lstat(candidate.c_str(), &st) == 0) {
        char buffer[PATH_MAX];
        if (!S_ISLNK(st.st_mode)) {
            result = std::move(candidate);
        } else if (::realpath(candidate.c_str(), buffer) != nullptr) {
            result = std::string(buffer);
        }
    }
    m_dir_cache.emplace(dir, result);
    return result;
}

bool PathResolver::inside_venv(std::string_view path) const {
    return is_below(path, m_root) && !(path == m_store || is_below(path, m_store));
}

const std::string& PathResolver::normal_base(const stdfs::path& base) {
    auto found = m_base_cache.find(base.native());
    if (found == m_base_cache.end()) {
        found = m_base_cache.emplace(base.native(), normal_string(base)).first;
    }
    return found->second;
}

std::optional<std::string> PathResolver::resolve(const stdfs::path& base,
                                                 const std::string& record_path,
                                                 const std::string& owner) {
    // Most RECORD paths are plain ("torch/lib/libc10.so"): joined as strings, no path objects.
    std::string full;
    if (is_plain_relative(record_path)) {
        const std::string& dir = normal_base(base);
        full.reserve(dir.size() + 1 + record_path.size());
        full.append(dir).append(dir == "/" ? "" : "/").append(record_path);
    } else {
        stdfs::path raw(record_path);
        full = (raw.is_absolute() ? raw : base / raw).lexically_normal().string(); // "a/" keeps its empty name
    }
    auto escape = [&]() {
        return usage_error("RECORD of " + owner + " lists '" + record_path +
                           "', which is outside the venv; refusing to touch anything");
    };
    size_t slash = full.rfind('/');
    std::string name = slash == std::string::npos ? full : full.substr(slash + 1);
    if (name.empty() || name == "." || name == ".." || slash == std::string::npos || !inside_venv(full)) {
        throw escape();
    }
    auto dir = canonical_dir(slash == 0 ? std::string("/") : full.substr(0, slash));
    if (!dir) {
        return std::nullopt;
    }
    std::string resolved = *dir == "/" ? "/" + name : *dir + "/" + name;
    if (!inside_venv(resolved)) {
        throw escape();
    }
    return resolved.substr(m_root == "/" ? 1 : m_root.size() + 1);
}

} // namespace venvtx
