// Requires-Dist lines (PEP 508): the required name, and whether the requirement applies to this
// venv — its environment marker evaluated as pip does for the venv's interpreter, with no extra
// selected (pip records no extras, so `extra == "x"` requirements do not count, as in `pip check`).
#pragma once

#include <optional>
#include <string>

namespace venvtx {

struct MarkerEnvironment {
    std::string python_full_version;  // from pyvenv.cfg, e.g. "3.11.7" (empty: unknown)
    std::string platform_machine;     // uname, e.g. "x86_64"
};

struct Requirement {
    std::string name;        // PEP 503 normalized
    std::string text;        // the line as written, for messages
    std::string marker;      // after ';', empty when none
};

// nullopt for a line that names no distribution.
std::optional<Requirement> parse_requirement(const std::string& line);

// Whether `marker` holds in `env` ("" holds). A marker venvtx cannot read, or one on a value it
// does not know, counts as holding: a warning too many beats one missed.
bool marker_holds(const std::string& marker, const MarkerEnvironment& env);

} // namespace venvtx
