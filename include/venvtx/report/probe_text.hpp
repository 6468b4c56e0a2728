// How a probe's report reads: one line, with its GPUs; its output's tail; whether it is at fault.
#pragma once

#include "venvtx/core/output.hpp"
#include "venvtx/probe/probe.hpp"

#include <optional>
#include <string>

namespace venvtx {

// "baseline probe passed in 1.23s (2 GPUs: 0=H200 ok ...)", or the verdict line of a failure.
// With -v, a failure's output tail too.
void say_probe(const Output& out, const std::string& label, const ProbeReport& report);
// The last `most` non-empty lines of what the probe printed (the traceback), each "    | ...".
std::string probe_output_lines(const ProbeReport& report, std::size_t most = 12);
// Why a probe that failed before and after the change failed because of itself (the same
// SyntaxError or NameError, a timeout both times), or nothing: the venv is not to blame.
std::optional<std::string> probe_at_fault(const ProbeReport& before, const ProbeReport& after);

} // namespace venvtx
