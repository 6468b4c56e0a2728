// Mount points from /proc/self/mountinfo: what is mounted below a directory.
#pragma once

#include <filesystem>
#include <vector>

namespace venvtx {

// Every mount point strictly below `dir` (lexically normal and absolute), in mountinfo's order,
// but those within `except` (a store inside the venv, mounted on its own).
std::vector<std::filesystem::path> mounts_below(const std::filesystem::path& dir, const std::filesystem::path& except);

// Whether `inner` is `outer` or lies below it (lexically).
bool is_within(const std::filesystem::path& inner, const std::filesystem::path& outer);

} // namespace venvtx
