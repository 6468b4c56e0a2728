// Installs venvtx does not remove path by path: an `.egg-info` file (distutils: which files are
// its own is not known; pip refuses it too), `.egg` eggs and `.egg-link` editables (pip removes
// those by editing easy-install.pth). An `.egg-info` directory is a distribution like a
// dist-info (inventory). Found by name, so that a removal of one says what it is instead of "no
// installed distribution matches".
#pragma once

#include "venvtx/venv/layout.hpp"

#include <string>
#include <vector>

namespace venvtx {

struct LegacyInstall {
    std::string name;  // as the file name spells it (before its first '-', or its extension)
    std::string path;  // venv-relative
    bool through_pip = false;  // an .egg or .egg-link: the venv's pip removes it (easy-install.pth)
};

std::vector<LegacyInstall> legacy_installs(const VenvLayout& layout);

// The legacy installs one of `patterns` names. Throws a usage Error (kind `legacy_install`) for
// one that nothing here removes (a distutils `.egg-info` file), or for any when `through_pip` is
// false: what it is, and that `pip uninstall` removes it.
std::vector<LegacyInstall> legacy_installs_named(const VenvLayout& layout, const std::vector<std::string>& patterns,
                                                 bool through_pip);

} // namespace venvtx
