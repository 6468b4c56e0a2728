// A pack file: objects in one tar archive (pax) compressed with zstd, written and read with
// libarchive. Each member is one object, named by its SHA-256 hex, in the order restores read
// them. Written through the fs seam (fault injection and kill points see every write).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace venvtx {

struct PackSource {
    std::string hex;
    std::filesystem::path file;  // the loose object
};

// Writes `sources` into a new file at `path` (created exclusively, fsynced; removed again on
// failure); returns its size in bytes.
std::uint64_t write_pack_file(const std::filesystem::path& path, const std::vector<PackSource>& sources);

// Pulls the current member's bytes: fills `buffer` with up to `size` bytes, 0 at its end.
using MemberReader = std::function<std::size_t(char* buffer, std::size_t size)>;

// Streams the pack once, in order: `on_member(hex, size, read)` for each member (a member it
// does not read is skipped). Throws an Error naming the pack when it cannot be read.
void read_pack_file(const std::filesystem::path& path,
                    const std::function<void(const std::string& hex, std::uint64_t size, const MemberReader& read)>&
                        on_member);

} // namespace venvtx
