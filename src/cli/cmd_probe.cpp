// venvtx probe: run the probe against the venv as it is now (exit 3 when it fails).
#include "command.hpp"

#include "venvtx/probe/probe.hpp"

#include <memory>

namespace venvtx::cli {

namespace {

struct ProbeFlags {
    std::vector<std::string> code;
    double timeout = 300;
    std::string gpus = "auto";
};

} // namespace

Command register_probe(CLI::App& parent) {
    auto flags = std::make_shared<ProbeFlags>();
    CLI::App* app = parent.add_subcommand("probe", "run the probe against the venv as it is now");
    app->add_option("--probe", flags->code, "Python code to run (repeatable; default: import torch)");
    app->add_option("--probe-timeout", flags->timeout, "seconds before the probe is killed")
        ->check(k_timeout);
    app->add_option("--gpus", flags->gpus, "GPUs the probe must see: auto (any), none, or N");
    return {app, [flags](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                ProbeSettings settings;
                settings.code = flags->code.empty() ? std::vector<std::string>{"import torch"} : flags->code;
                settings.timeout_s = flags->timeout;
                settings.gpus = parse_gpu_expectation(flags->gpus);
                ProbeReport report = run_probe(context.layout, settings, expected_gpu_count(settings, nullptr));
                if (out.json()) {
                    out.document(probe_report_json(report));
                } else {
                    out.verdict(std::string("probe ") + (report.passed ? "passed" : "FAILED: " + report.error.value_or("")) +
                                " (" + std::to_string(report.duration_s).substr(0, 4) + "s)");
                    if (report.gpus) {
                        for (const auto& gpu : *report.gpus) {
                            out.verdict("  GPU " + std::to_string(gpu.index) + " " + gpu.name + ": " +
                                        (gpu.ok ? "ok" : gpu.error.value_or("failed")));
                        }
                    }
                }
                return report.passed ? 0 : static_cast<int>(ExitCode::probe_failed);
            }};
}

} // namespace venvtx::cli
