// How a probe's report reads: one line, with its GPUs.
#pragma once

#include "venvtx/core/output.hpp"
#include "venvtx/probe/probe.hpp"

#include <string>

namespace venvtx {

// "baseline probe passed in 1.23s (2 GPUs: 0=H200 ok ...)", or the verdict line of a failure.
void say_probe(const Output& out, const std::string& label, const ProbeReport& report);

} // namespace venvtx
