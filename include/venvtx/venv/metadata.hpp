// METADATA (core metadata, RFC 822 style headers) and entry_points.txt (INI style).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace venvtx {

struct Metadata {
    std::string name;
    std::string version;
    std::vector<std::string> requires_dist;
};

// Reads the header block; continuation lines are folded. Missing fields stay empty.
Metadata parse_metadata(std::string_view text);

// Names of the [console_scripts] and [gui_scripts] entries.
std::vector<std::string> parse_script_names(std::string_view entry_points_text);

} // namespace venvtx
