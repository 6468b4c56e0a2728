// Turns the paths a RECORD names into venv-relative paths, refusing any that escape the venv
// (by '..', by an absolute path, or through a symlinked directory) or reach into the store.
#pragma once

#include "venvtx/venv/layout.hpp"

#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace venvtx {

class PathResolver {
public:
    PathResolver(const VenvLayout& layout, std::filesystem::path store_root);

    // The venv-relative path of `record_path` (relative to `base`, or absolute), with every
    // directory component resolved and the final component left unfollowed. nullopt when its
    // directory does not exist. Throws a usage Error naming `owner` when the path escapes.
    std::optional<std::string> resolve(const std::filesystem::path& base,
                                       const std::string& record_path, const std::string& owner);

private:
    std::optional<std::filesystem::path> canonical_dir(const std::filesystem::path& dir);
    bool inside_venv(const std::filesystem::path& path) const;

    std::filesystem::path m_root;
    std::filesystem::path m_store;
    std::map<std::string, std::optional<std::filesystem::path>> m_dir_cache;
};

} // namespace venvtx
