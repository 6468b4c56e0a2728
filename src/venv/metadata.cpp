// Header-block reader for METADATA and section reader for entry_points.txt.
#include "venvtx/venv/metadata.hpp"

namespace venvtx {

namespace {

std::string_view trim(std::string_view text) {
    size_t begin = text.find_first_not_of(" \t\r");
    if (begin == std::string_view::npos) {
        return {};
    }
    size_t end = text.find_last_not_of(" \t\r");
    return text.substr(begin, end - begin + 1);
}

template <typename Visit> void for_each_line(std::string_view text, Visit visit) {
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) {
            end = text.size();
        }
        std::string_view line = text.substr(pos, end - pos);
        if (!line.empty() && line.back() == '\r') {
            line.remove_suffix(1);
        }
        if (!visit(line)) {
            return;
        }
        pos = end + 1;
    }
}

} // namespace

Metadata parse_metadata(std::string_view text) {
    Metadata metadata;
    std::string* last = nullptr;
    for_each_line(text, [&](std::string_view line) {
        if (line.empty()) {
            return false; // end of headers; the body follows
        }
        if (line.front() == ' ' || line.front() == '\t') {
            if (last) {
                *last += " ";
                *last += trim(line);
            }
            return true; // a continuation never starts a header
        }
        size_t colon = line.find(':');
        if (colon == std::string_view::npos) {
            last = nullptr;
            return true;
        }
        std::string_view key = trim(line.substr(0, colon));
        std::string value(trim(line.substr(colon + 1)));
        last = nullptr;
        if (key == "Name") {
            metadata.name = value;
            last = &metadata.name;
        } else if (key == "Version") {
            metadata.version = value;
            last = &metadata.version;
        } else if (key == "Requires-Dist") {
            metadata.requires_dist.push_back(value);
            last = &metadata.requires_dist.back();
        }
        return true;
    });
    return metadata;
}

std::vector<std::string> parse_script_names(std::string_view entry_points_text) {
    std::vector<std::string> names;
    bool in_scripts = false;
    for_each_line(entry_points_text, [&](std::string_view raw) {
        std::string_view line = trim(raw);
        if (line.empty() || line.front() == '#' || line.front() == ';') {
            return true;
        }
        if (line.front() == '[') {
            in_scripts = line == "[console_scripts]" || line == "[gui_scripts]";
            return true;
        }
        size_t equals = line.find('=');
        if (in_scripts && equals != std::string_view::npos) {
            std::string_view name = trim(line.substr(0, equals));
            if (!name.empty()) {
                names.emplace_back(name);
            }
        }
        return true;
    });
    return names;
}

} // namespace venvtx
