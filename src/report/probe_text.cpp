// A probe's line: passed with its time, or the verdict of a failure; the GPUs it saw.
#include "venvtx/report/probe_text.hpp"

#include <sstream>
#include <vector>

namespace venvtx {

namespace {

std::string gpu_summary(const ProbeReport& report) {
    if (!report.gpus) {
        return "";
    }
    if (report.gpus->empty()) {
        return " (no GPU visible)";
    }
    std::string text = " (" + counted(report.gpus->size(), "GPU") + ":";
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
        if (out.verbose() && !report.output_tail.empty()) {
            out.debug(label + " output, its last lines:\n" + probe_output_lines(report));
        }
    }
}

std::string probe_output_lines(const ProbeReport& report, std::size_t most) {
    std::vector<std::string> lines;
    std::istringstream text(report.output_tail);
    for (std::string line; std::getline(text, line);) {
        if (!line.empty()) {
            lines.push_back(line);
        }
    }
    std::string shown;
    for (std::size_t i = lines.size() > most ? lines.size() - most : 0; i < lines.size(); ++i) {
        shown += (shown.empty() ? "    | " : "\n    | ") + lines[i];
    }
    return shown;
}

std::optional<std::string> probe_at_fault(const ProbeReport& before, const ProbeReport& after) {
    if (before.passed || after.passed || before.error != after.error || !before.error) {
        return std::nullopt;
    }
    if (before.timed_out && after.timed_out) {
        return "the probe timed out before and after the change: it may need more than --probe-timeout "
               "(venvtx probe runs it alone)";
    }
    if (before.error->rfind("SyntaxError", 0) == 0 || before.error->rfind("IndentationError", 0) == 0 ||
        before.error->rfind("NameError", 0) == 0) {
        return "the probe fails the same way before and after the change (" + *before.error +
               "): the probe's own fault, not the venv's (venvtx probe runs it alone)";
    }
    return std::nullopt;
}

} // namespace venvtx
