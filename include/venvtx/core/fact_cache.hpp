// Facts read from a file, reused while the file's InodeKey is unchanged (the interface planning
// reads through; store/indexed_facts keeps them in the index).
#pragma once

#include "venvtx/core/inode_key.hpp"

#include <optional>
#include <string>

namespace venvtx {

class FactCache {
public:
    virtual ~FactCache() = default;
    // The facts of `kind` kept for `path` (venv-relative) when its key is still `key`.
    virtual std::optional<std::string> find(const std::string& path, const std::string& kind,
                                            const InodeKey& key) const = 0;
    // Keeps facts read from `path` while its key was `key` (taken before the facts were read).
    virtual void keep(const std::string& path, const std::string& kind, const InodeKey& key, std::string facts) = 0;
};

} // namespace venvtx
