// run_probe: spawn the venv's interpreter on the probe script and judge its report.
#include "venvtx/probe/probe.hpp"

#include "probe_script.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/json_text.hpp"
#include "venvtx/core/output.hpp"
#include "venvtx/core/progress.hpp"
#include "venvtx/core/subprocess.hpp"

#include <chrono>
#include <regex>
#include <sstream>

namespace venvtx {

namespace {

constexpr size_t k_tail_bytes = 4000;

std::string tail(const std::string& text) {
    return text.size() <= k_tail_bytes ? text : text.substr(text.size() - k_tail_bytes);
}

// The last line that names an exception ("ImportError: ..."), else the last non-empty line.
std::optional<std::string> last_error_line(const std::string& output) {
    static const std::regex k_exception(R"(^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b.*)");
    std::optional<std::string> last;
    std::optional<std::string> error;
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);) {
        if (line.empty()) {
            continue;
        }
        last = line;
        if (std::regex_match(line, k_exception)) {
            error = line;
        }
    }
    return error ? error : last;
}

std::vector<GpuResult> read_gpus(const nlohmann::json& items) {
    std::vector<GpuResult> gpus;
    for (const auto& item : items) {
        GpuResult gpu;
        gpu.index = item.value("index", 0);
        gpu.name = item["name"].is_string() ? item["name"].get<std::string>() : "";
        gpu.ok = item.value("ok", false);
        if (item["error"].is_string()) {
            gpu.error = item["error"].get<std::string>();
        }
        gpus.push_back(gpu);
    }
    return gpus;
}

} // namespace

void judge_gpus(ProbeReport& report, std::optional<int> expected) {
    if (!report.passed || !report.gpus) {
        return;
    }
    for (const auto& gpu : *report.gpus) {
        if (!gpu.ok) {
            report.passed = false;
            report.error = "GPU " + std::to_string(gpu.index) + " (" + gpu.name +
                           ") failed: " + gpu.error.value_or("unknown error");
            return;
        }
    }
    int seen = static_cast<int>(report.gpus->size());
    if (expected && seen < *expected) {
        report.passed = false;
        report.error = "expected " + counted(*expected, "GPU") + ", torch sees " +
                       std::to_string(seen);
    } else if (expected && seen > *expected) {
        report.passed = false;
        report.error = "expected exactly " + counted(*expected, "GPU") + ", torch sees " +
                       std::to_string(seen);
    }
}

GpuExpectation parse_gpu_expectation(const std::string& text) {
    if (text == "auto") {
        return {GpuExpectation::Mode::automatic, 0};
    }
    if (text == "none") {
        return {GpuExpectation::Mode::none, 0};
    }
    try {
        size_t used = 0;
        int count = std::stoi(text, &used);
        if (used == text.size() && count >= 0) {
            return {GpuExpectation::Mode::exact, count};
        }
    } catch (const std::exception&) {
    }
    throw usage_error("--gpus takes auto, none or a number, not '" + text + "'");
}

std::optional<int> expected_gpu_count(const ProbeSettings& settings, const ProbeReport* baseline) {
    switch (settings.gpus.mode) {
    case GpuExpectation::Mode::exact:
        return settings.gpus.count;
    case GpuExpectation::Mode::none:
        return std::nullopt;
    case GpuExpectation::Mode::automatic:
        if (baseline && baseline->gpus) {
            return static_cast<int>(baseline->gpus->size());
        }
        return std::nullopt;
    }
    return std::nullopt;
}

ProbeReport run_probe(const VenvLayout& layout, const ProbeSettings& settings,
                      std::optional<int> expected_gpus) {
    SubprocessSpec spec;
    spec.argv = {layout.python.string(), "-c", k_probe_script};
    spec.env["PYTHONDONTWRITEBYTECODE"] = "1";
    spec.env["VENVTX_PROBE_CODE"] = json_text(settings.code, -1);
    spec.env["VENVTX_PROBE_GPUS"] = settings.gpus.mode == GpuExpectation::Mode::none ? "none" : "check";
    spec.env["VIRTUAL_ENV"] = layout.root.string();
    spec.env["PYTHONHOME"] = std::nullopt;
    spec.env["PYTHONPATH"] = std::nullopt;
    spec.timeout = std::chrono::milliseconds(static_cast<long>(settings.timeout_s * 1000));
    spec.report_pipe = true;
    spec.kill_descendants = true; // the verdict is the interpreter's; nothing it started outlives it
    std::string shown;
    for (const auto& code : settings.code) {
        shown += (shown.empty() ? "" : "; ") + code;
    }
    Progress::Phase phase("probing `" + shown + "`");
    SubprocessResult result = run_subprocess(spec);

    ProbeReport report;
    report.code = settings.code;
    report.exit_code = result.exit_code;
    report.timed_out = result.timed_out;
    report.duration_s = result.duration_s;
    report.output_tail = tail(result.out + result.err);
    if (result.timed_out) {
        report.error = "probe timed out after " + std::to_string(static_cast<int>(settings.timeout_s)) +
                       "s (killed)";
        return report;
    }
    nlohmann::json channel = nlohmann::json::parse(result.report, nullptr, false);
    if (channel.is_discarded() || !channel.is_object()) {
        report.error = last_error_line(result.err).value_or(
            "probe exited with status " + std::to_string(result.exit_code) + " and no report");
        return report;
    }
    report.passed = channel.value("passed", false) && result.exit_code == 0;
    if (channel.contains("error") && channel["error"].is_string()) {
        report.error = channel["error"].get<std::string>();
    } else if (!report.passed) {
        report.error = "probe exited with status " + std::to_string(result.exit_code);
    }
    if (channel.contains("gpus") && channel["gpus"].is_array()) {
        report.gpus = read_gpus(channel["gpus"]);
    }
    if (channel.contains("mapped") && channel["mapped"].is_array()) {
        report.mapped = channel["mapped"].get<std::vector<std::string>>();
    }
    judge_gpus(report, expected_gpus);
    return report;
}

nlohmann::json probe_report_json(const ProbeReport& report) {
    nlohmann::json json = {{"code", report.code},
                           {"passed", report.passed},
                           {"exit_code", report.exit_code},
                           {"timed_out", report.timed_out},
                           {"duration_s", report.duration_s},
                           {"error", report.error ? nlohmann::json(*report.error) : nlohmann::json()},
                           {"gpus", nlohmann::json()},
                           {"output_tail", report.output_tail},
                           {"mapped", report.mapped}};
    if (report.gpus) {
        json["gpus"] = nlohmann::json::array();
        for (const auto& gpu : *report.gpus) {
            json["gpus"].push_back({{"index", gpu.index},
                                    {"name", gpu.name},
                                    {"ok", gpu.ok},
                                    {"error", gpu.error ? nlohmann::json(*gpu.error) : nlohmann::json()}});
        }
    }
    return json;
}

ProbeReport probe_report_from_json(const nlohmann::json& json) {
    ProbeReport report;
    report.code = json.value("code", std::vector<std::string>{});
    report.passed = json.value("passed", false);
    report.exit_code = json.value("exit_code", 0);
    report.timed_out = json.value("timed_out", false);
    report.duration_s = json.value("duration_s", 0.0);
    if (json.contains("error") && json["error"].is_string()) {
        report.error = json["error"].get<std::string>();
    }
    report.output_tail = json.value("output_tail", "");
    report.mapped = json.value("mapped", std::vector<std::string>{});
    if (json.contains("gpus") && json["gpus"].is_array()) {
        report.gpus = read_gpus(json["gpus"]);
    }
    return report;
}

} // namespace venvtx
