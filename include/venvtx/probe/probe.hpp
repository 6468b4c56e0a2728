// The probe: the venv's own interpreter runs the user's code, then checks every visible GPU
// through torch, in a fresh process group with a timeout and PYTHONDONTWRITEBYTECODE=1.
#pragma once

#include "venvtx/venv/layout.hpp"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace venvtx {

// --gpus auto|none|N
struct GpuExpectation {
    enum class Mode { automatic, none, exact } mode = Mode::automatic;
    int count = 0;  // for exact
};
GpuExpectation parse_gpu_expectation(const std::string& text);

struct ProbeSettings {
    std::vector<std::string> code;  // each run in order, in its own namespace
    double timeout_s = 300;
    GpuExpectation gpus;
};

struct GpuResult {
    int index = 0;
    std::string name;
    bool ok = false;
    std::optional<std::string> error;
};

struct ProbeReport {
    std::vector<std::string> code;
    bool passed = false;
    int exit_code = 0;
    bool timed_out = false;
    double duration_s = 0;
    std::optional<std::string> error;            // the first line that explains a failure
    std::optional<std::vector<GpuResult>> gpus;  // nullopt: torch was not imported or --gpus none
    std::string output_tail;                     // the end of stdout+stderr, for `show`
    std::vector<std::string> mapped;             // venv-relative shared objects it had mapped
};

// Runs the probe once. `expected_gpus` (from the baseline or --gpus N) fails the probe when
// fewer GPUs are seen. Throws Error only when the interpreter cannot be started.
ProbeReport run_probe(const VenvLayout& layout, const ProbeSettings& settings,
                      std::optional<int> expected_gpus);

// Fails a passing report when one of its GPUs failed, or when it saw other than `expected`
// GPUs (a probe judged again once the baseline it ran beside has said how many there are).
void judge_gpus(ProbeReport& report, std::optional<int> expected);
// How many GPUs a passing probe expects next, given the baseline report.
std::optional<int> expected_gpu_count(const ProbeSettings& settings, const ProbeReport* baseline);

nlohmann::json probe_report_json(const ProbeReport& report);
ProbeReport probe_report_from_json(const nlohmann::json& json);

} // namespace venvtx
