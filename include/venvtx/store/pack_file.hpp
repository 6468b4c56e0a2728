// A pack file: objects in one tar archive (pax) compressed with zstd, written and read with
// libarchive. Each member is one object, named by its SHA-256 hex, in the order restores read
// them. Written through the fs seam (fault injection and kill points see every write).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <sys/types.h>
#include <utility>
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

// A member as its loose object was: the file a restore renames into place keeps its owner and
// extended attributes (user.*, security.capability, ...); mode and mtime come from the journal.
struct PackMember {
    std::string hex;
    std::uint64_t size = 0;
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<std::pair<std::string, std::string>> xattrs;  // name, value
};

// Streams the pack once, in order: `on_member(member, read)` for each member (a member it
// does not read is skipped). Throws an Error naming the pack when it cannot be read.
void read_pack_file(const std::filesystem::path& path,
                    const std::function<void(const PackMember& member, const MemberReader& read)>& on_member);

} // namespace venvtx
