// mounts_below: mountinfo's fifth field, unescaped.
#include "venvtx/core/mount_table.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

// mountinfo writes space, tab, newline and backslash in a mount point as \ooo.
std::string unescaped_mount_point(const std::string& field) {
    std::string out;
    for (std::size_t i = 0; i < field.size(); ++i) {
        if (field[i] == '\\' && i + 3 < field.size()) {
            out += static_cast<char>(std::stoi(field.substr(i + 1, 3), nullptr, 8));
            i += 3;
        } else {
            out += field[i];
        }
    }
    return out;
}

} // namespace

bool is_within(const stdfs::path& inner, const stdfs::path& outer) {
    auto [end, _] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
    return end == outer.end();
}

std::vector<stdfs::path> mounts_below(const stdfs::path& dir, const stdfs::path& except) {
    std::vector<stdfs::path> found;
    std::ifstream mounts("/proc/self/mountinfo");
    std::string line;
    while (std::getline(mounts, line)) {
        std::istringstream fields(line);
        std::string id, parent, device, root, point;
        fields >> id >> parent >> device >> root >> point;
        stdfs::path mounted(unescaped_mount_point(point));
        if (mounted != dir && is_within(mounted, dir) && !is_within(mounted, except)) {
            found.push_back(mounted);
        }
    }
    return found;
}

} // namespace venvtx
