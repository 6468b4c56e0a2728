// Turns the paths a RECORD names into venv-relative paths, refusing any that escape the venv
// (by '..', by an absolute path, or through a symlinked directory) or reach into the store.
#pragma once

#include "venvtx/venv/layout.hpp"

#include <filesystem>
#include <string_view>
#include <unordered_map>
#include <optional>
#include <string>

namespace venvtx {

class PathResolver {
public:
    PathResolver(const VenvLayout& layout, const std::filesystem::path& store_root);

    // The venv-relative path of `record_path` (relative to `base`, or absolute), with every
    // directory component resolved and the final component left unfollowed. nullopt when its
    // directory does not exist. Throws a usage Error naming `owner` when the path escapes.
    std::optional<std::string> resolve(const std::filesystem::path& base,
                                       const std::string& record_path, const std::string& owner);

private:
    std::optional<std::string> canonical_dir(const std::string& dir);
    bool inside_venv(std::string_view path) const;
    const std::string& normal_base(const std::filesystem::path& base);

    std::string m_root;   // lexically normal, no trailing '/'
    std::string m_store;
    std::unordered_map<std::string, std::optional<std::string>> m_dir_cache;
    std::unordered_map<std::string, std::string> m_base_cache;
};

} // namespace venvtx
