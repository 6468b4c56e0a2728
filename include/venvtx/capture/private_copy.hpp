// A staged file that has another name gets a copy of its own: whatever writes through that name
// must not change what the store keeps.
#pragma once

#include "venvtx/core/inode_key.hpp"

#include <filesystem>
#include <optional>
#include <sys/types.h>

namespace venvtx {

// Replaces `staged` by a private copy (mode `mode`, else its own) when its inode has another
// name, unless `may_share` (see capture/capture.hpp, CaptureHints::uv_linked). `hold`: where the
// store's hold of these bytes would be (store/holds.hpp); a hold is the store's own name, not
// another. Returns the staged file's inode key (one lstat where nothing is copied).
struct KeptFile {
    InodeKey key;
    bool copied = false;  // a private copy replaced it: its bytes were read once more
};
KeptFile keep_private(const std::filesystem::path& staged, std::optional<mode_t> mode = std::nullopt,
                      bool may_share = false, const std::filesystem::path& hold = {});

} // namespace venvtx
