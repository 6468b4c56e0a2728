// Where a venv keeps things: its root, interpreter, site-packages and scripts directory.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace venvtx {

struct VenvLayout {
    std::filesystem::path root;                        // canonical
    std::filesystem::path python;                      // <root>/bin/python
    std::filesystem::path scripts;                     // <root>/bin
    std::vector<std::filesystem::path> site_packages;  // canonical, without duplicates
    std::string python_version;                        // from pyvenv.cfg, may be empty
    std::string found_by;  // how find_venv chose it: "--venv", "$VIRTUAL_ENV" or ".venv" ("" otherwise)
    std::filesystem::path other_venv;  // a .venv (here or above) that $VIRTUAL_ENV won over, or empty
};

// A venv-relative path as people read it: relative to site-packages when inside it.
std::string display_path(const VenvLayout& layout, const std::string& rel);

// What `activate` sets, for a command run in the venv: VIRTUAL_ENV, its bin/ first on PATH,
// no PYTHONHOME (set, or with an empty optional unset, on top of venvtx's environment).
std::map<std::string, std::optional<std::string>> activated_environment(const VenvLayout& layout);

// --venv, else $VIRTUAL_ENV, else .venv in the working directory or the nearest one above it
// (as uv looks). Throws a usage Error when none is a venv (naming $VIRTUAL_ENV when it was that).
// `store`: --store, when given (see read_layout).
VenvLayout find_venv(const std::optional<std::filesystem::path>& explicit_dir,
                     const std::optional<std::filesystem::path>& store = std::nullopt);

// Reads the layout of the venv at `dir`, which must hold pyvenv.cfg or a venvtx history (in
// `store`, else <dir>/.venvtx): a change that took pyvenv.cfg away must stay undoable.
VenvLayout read_layout(const std::filesystem::path& dir,
                       const std::optional<std::filesystem::path>& store = std::nullopt);

} // namespace venvtx
