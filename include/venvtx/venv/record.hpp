// RECORD (PEP 376 / PEP 427): a CSV file of path,hash,size rows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace venvtx {

struct RecordEntry {
    std::string path;                   // as written: relative to site-packages, or absolute
    std::string hash;                   // "sha256=<urlsafe-b64>" or empty
    std::optional<std::uint64_t> size;  // empty for RECORD itself and .pyc files
};

// Parses RECORD text (RFC 4180 quoting, \n or \r\n). Throws a usage Error naming `source`
// and the line on malformed or torn input.
std::vector<RecordEntry> parse_record(std::string_view text, const std::string& source);

} // namespace venvtx
