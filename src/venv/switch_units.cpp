// Switch units: which top-level entry a venv path belongs to.
#include "venvtx/venv/switch_units.hpp"

#include <vector>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

bool is_prefix(const std::string& prefix, const std::string& path) {
    return path.size() >= prefix.size() && path.compare(0, prefix.size(), prefix) == 0 &&
           (path.size() == prefix.size() || path[prefix.size()] == '/');
}

} // namespace

SwitchUnits::SwitchUnits(const VenvLayout& layout) : m_areas{"bin", "include", "share"} {
    for (const auto& site : layout.site_packages) {
        stdfs::path relative = site.lexically_relative(layout.root);
        if (!relative.empty() && *relative.begin() != "..") {
            m_areas.push_back(relative.string());
        }
    }
}

std::optional<std::string> SwitchUnits::unit_of(const std::string& path) const {
    std::string prefix;
    for (const auto& part : stdfs::path(path)) {
        if (!prefix.empty()) {
            prefix += '/';
        }
        prefix += part.string();
        bool inside_one = false;
        for (const auto& area : m_areas) {
            inside_one = inside_one || is_prefix(prefix, area);
        }
        if (!inside_one) {
            return prefix;
        }
    }
    return std::nullopt;
}

std::optional<std::string> Relocation::unit_of(const std::string& path) const {
    if (m_shadows.empty()) {
        return std::nullopt;
    }
    for (std::size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
        if (m_shadows.count(path.substr(0, slash)) != 0) {
            return path.substr(0, slash);
        }
    }
    if (m_shadows.count(path) != 0) {
        return path;
    }
    return std::nullopt;
}

stdfs::path Relocation::locate(const stdfs::path& root, const std::string& path) const {
    std::optional<std::string> unit = unit_of(path);
    if (!unit) {
        return root / path;
    }
    return root / (m_shadows.at(*unit) + path.substr(unit->size()));
}

} // namespace venvtx
