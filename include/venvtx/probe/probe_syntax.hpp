// Probe code checked before it is used or saved: compiled by the venv's own interpreter, so a
// typo is a one-line refusal (exit 2, nothing changed) instead of a baseline and an after that
// both "fail" and read as a broken venv.
#pragma once

#include "venvtx/venv/layout.hpp"

#include <string>
#include <vector>

namespace venvtx {

// Throws a usage Error naming the first probe line that does not compile. Anything else that
// goes wrong here (no interpreter yet) is left to the probe itself to report.
void check_probe_syntax(const VenvLayout& layout, const std::vector<std::string>& code);

} // namespace venvtx
