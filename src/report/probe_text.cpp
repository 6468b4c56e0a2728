// A probe's line: passed with its time, or the verdict of a failure; the GPUs it saw.
#include "venvtx/report/probe_text.hpp"

namespace venvtx {

namespace {

std::string plural_of(std::size_t count, const char* noun) {
    return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

std::string gpu_summary(const ProbeReport& report) {
    if (!report.gpus) {
        return "";
    }
    if (report.gpus->empty()) {
        return " (no GPU visible)";
    }
    std::string text = " (" + plural_of(report.gpus->size(), "GPU") + ":";
    for (const auto& gpu : *report.gpus) { // appended piece by piece: g++ 12 misreads the chain (-Wrestrict)
        text.append(" ").append(std::to_string(gpu.index)).append("=");
        text.append(gpu.name.empty() ? "?" : gpu.name).append(gpu.ok ? " ok" : " FAILED");
    }
    return text + ")";
}

}  // namespace

void say_probe(const Output& out, const std::string& label, const ProbeReport& report) {
    if (report.passed) {
        out.say(label + " passed in " + std::to_string(report.duration_s).substr(0, 4) +
                "s" + gpu_summary(report));
    } else {
        out.verdict(label + " FAILED: " + report.error.value_or("unknown error") +
                    gpu_summary(report));
    }
}

} // namespace venvtx
