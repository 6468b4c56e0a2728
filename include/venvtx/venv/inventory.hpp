// The installed distributions of a venv: every *.dist-info directory in its site-packages, and
// the legacy *.egg-info ones.
#pragma once

#include "venvtx/core/fact_cache.hpp"
#include "venvtx/venv/layout.hpp"
#include "venvtx/venv/record.hpp"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace venvtx {

struct Distribution {
    std::string name;        // as METADATA spells it
    std::string normalized;  // PEP 503
    std::string version;
    std::filesystem::path dist_info;      // absolute
    std::filesystem::path site_packages;  // what RECORD paths are relative to
    std::vector<std::string> requires_dist;
    std::vector<std::string> scripts;     // console and gui script names
    std::string installer;                // INSTALLER, e.g. "pip" or "uv"
    std::vector<RecordEntry> record;
    std::optional<std::string> record_error;  // missing or malformed RECORD
};

struct DistInfoDir {
    std::filesystem::path site_packages;
    std::filesystem::path dist_info;  // absolute: a *.dist-info, or a legacy *.egg-info (directory or file)
};

// Every *.dist-info directory of the venv's site-packages (symlinks aside), unsorted.
std::vector<DistInfoDir> list_dist_infos(const VenvLayout& layout);
// What importlib.metadata, and so pip, finds: every *.dist-info directory and *.egg-info
// directory or file, in directory order, site-packages by site-packages. Of two with one name
// the first is the one pip lists (and uninstalls); the later one is shadowed.
std::vector<DistInfoDir> list_installed_infos(const VenvLayout& layout);
// Name, version, requirements, scripts and installer of one dist-info (an egg-info's from its
// PKG-INFO, or the file itself); RECORD is not read.
Distribution read_installed(const DistInfoDir& dir, const std::filesystem::path& venv_root,
                            FactCache* facts = nullptr);

// Reads every dist-info of the venv, and every flat `.egg-info` directory whose name no dist-info
// has (its files from installed-files.txt, else top_level.txt, as pip finds them; written into
// `record` as RECORD paths, without hashes), sorted by normalized name. Never throws for a broken
// RECORD: the error is kept on the distribution and raised when that distribution is used.
// METADATA's facts come from `facts` while the file is unchanged (nullptr: always read).
std::vector<Distribution> scan_inventory(const VenvLayout& layout, FactCache* facts = nullptr);

// Name -> version of every distribution pip lists (dist-infos and egg-infos, the first of a
// name), from METADATA alone (no RECORD read): cheap enough to run around every command.
std::map<std::string, std::string> installed_versions(const VenvLayout& layout, FactCache* facts = nullptr);

// Throws the usage Error stored in `dist.record_error`, if any, or one for a RECORD that lists
// nothing (not even itself: what was installed is not known).
void require_record(const Distribution& dist);

} // namespace venvtx
