// The distribution venvtx itself came from, when the running binary lives in the venv it is
// changing (`pip install venvtx` into that venv): a change must not remove or replace the
// running venvtx's own files unless told to (--force).
#pragma once

#include "venvtx/venv/layout.hpp"

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace venvtx {

struct OwnDistribution {
    std::string name;             // as METADATA spells it
    std::string version;
    std::string binary;           // venv-relative: the running executable
    std::set<std::string> paths;  // venv-relative: every file its RECORD lists, and its dist-info
};

// nullopt unless the running executable (/proc/self/exe) is a file of the venv that some
// distribution's RECORD lists. Costs nothing more than one readlink when venvtx runs from
// elsewhere.
std::optional<OwnDistribution> own_distribution(const VenvLayout& layout, const std::filesystem::path& store_root);

// Throws a usage Error (kind "own_distribution"; nothing was changed yet when it is thrown)
// when one of `paths` (venv-relative) belongs to `own`; `what` names the change ("the removal").
void refuse_changing_own_distribution(const OwnDistribution& own, const std::vector<std::string>& paths,
                                      const std::string& what);

} // namespace venvtx
