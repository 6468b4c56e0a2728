// PathResolver: containment checks for RECORD paths, with a cache of resolved directories.
#include "venvtx/venv/path_resolver.hpp"

#include "venvtx/core/error.hpp"

#include <climits>
#include <cstdlib>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

bool is_within(const stdfs::path& path, const stdfs::path& dir) {
    auto rel = path.lexically_relative(dir);
    return !rel.empty() && *rel.begin() != "..";
}

} // namespace

PathResolver::PathResolver(const VenvLayout& layout, stdfs::path store_root)
    : m_root(layout.root), m_store(std::move(store_root)) {}

std::optional<stdfs::path> PathResolver::canonical_dir(const stdfs::path& dir) {
    auto found = m_dir_cache.find(dir.string());
    if (found != m_dir_cache.end()) {
        return found->second;
    }
    std::optional<stdfs::path> result;
    char buffer[PATH_MAX];
    if (::realpath(dir.c_str(), buffer) != nullptr) {
        result = stdfs::path(buffer);
    }
    m_dir_cache.emplace(dir.string(), result);
    return result;
}

bool PathResolver::inside_venv(const stdfs::path& path) const {
    return is_within(path, m_root) && !(path == m_store || is_within(path, m_store));
}

std::optional<std::string> PathResolver::resolve(const stdfs::path& base,
                                                 const std::string& record_path,
                                                 const std::string& owner) {
    stdfs::path raw(record_path);
    stdfs::path full = (raw.is_absolute() ? raw : base / raw).lexically_normal();
    auto escape = [&]() {
        return usage_error("RECORD of " + owner + " lists '" + record_path +
                           "', which is outside the venv; refusing to touch anything");
    };
    stdfs::path name = full.filename();
    if (name.empty() || name == "." || name == ".." || !inside_venv(full)) {
        throw escape();
    }
    auto dir = canonical_dir(full.parent_path());
    if (!dir) {
        return std::nullopt;
    }
    stdfs::path resolved = *dir / name;
    if (!inside_venv(resolved)) {
        throw escape();
    }
    return resolved.lexically_relative(m_root).string();
}

} // namespace venvtx
