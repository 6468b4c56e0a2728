// The units a change is switched into place by: each top-level entry of site-packages, bin/,
// include/ and share/ (a package directory, a module, a dist-info, a .pth, a script), and of
// the venv root beside them. A path in one of those areas, or an ancestor of one, belongs to
// no unit. (A namespace directory that stays, such as nvidia/, is split further by the switch's
// plan: each package in it is a unit.) While a unit is switched, its paths lie below its
// shadow (Relocation).
#pragma once

#include "venvtx/venv/layout.hpp"

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace venvtx {

class SwitchUnits {
public:
    explicit SwitchUnits(const VenvLayout& layout);
    // The venv-relative unit `path` belongs to: the shortest prefix of it that is neither one
    // of the areas nor an ancestor of one. nullopt for an area or an ancestor itself.
    std::optional<std::string> unit_of(const std::string& path) const;

private:
    std::vector<std::string> m_areas;  // venv-relative
};

// Where a venv path lies while its unit is switched: below the unit's shadow. Units never nest.
class Relocation {
public:
    Relocation() = default;
    // `fresh`: the units with nothing at their path (a package a rollback brings back): their
    // shadows may take sources by rename, since recovery completes such a switch.
    explicit Relocation(std::map<std::string, std::string> shadows, std::set<std::string> fresh = {})
        : m_shadows(std::move(shadows)), m_fresh(std::move(fresh)) {}

    // <root>/<path>, or <root>/<shadow>/<rest> when `path` is in a relocated unit.
    std::filesystem::path locate(const std::filesystem::path& root, const std::string& path) const;
    // The relocated unit `path` is in, if any.
    std::optional<std::string> unit_of(const std::string& path) const;
    // Whether `path` is in a relocated unit that is not fresh: its shadow links what it takes.
    bool links_sources(const std::string& path) const {
        std::optional<std::string> unit = unit_of(path);
        return unit && m_fresh.count(*unit) == 0;
    }
    bool active() const { return !m_shadows.empty(); }

private:
    std::map<std::string, std::string> m_shadows;  // unit -> shadow, both venv-relative
    std::set<std::string> m_fresh;
};

} // namespace venvtx
