// Installs venvtx does not remove: an `.egg-info` file (distutils: which files are its own is not
// known; pip refuses it too), `.egg` eggs and `.egg-link` editables (pip removes those by editing
// easy-install.pth). An `.egg-info` directory is a distribution like a dist-info (inventory).
// Found by name, so that a removal of one says what it is instead of "no installed distribution
// matches".
#pragma once

#include "venvtx/venv/layout.hpp"

#include <string>
#include <vector>

namespace venvtx {

struct LegacyInstall {
    std::string name;  // as the file name spells it (before its first '-', or its extension)
    std::string path;  // venv-relative
};

std::vector<LegacyInstall> legacy_installs(const VenvLayout& layout);

// Throws a usage Error (kind `legacy_install`) when one of `patterns` names a legacy install:
// what it is, and that pip removes it.
void refuse_legacy_installs(const VenvLayout& layout, const std::vector<std::string>& patterns);

} // namespace venvtx
