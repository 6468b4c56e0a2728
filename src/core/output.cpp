// Output: routing of results and the debug log to their channels, around the progress line.
#include "venvtx/core/output.hpp"

#include "venvtx/core/json_text.hpp"
#include "venvtx/core/progress.hpp"

#include <cstdio>
#include <unistd.h>

namespace venvtx {

std::string human_bytes(std::uint64_t bytes) {
    const char* units[] = {"B", "KB", "MB", "GB", "TB"};
    double value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1000 && unit < 4) {
        value /= 1000;
        ++unit;
    }
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
    return buffer;
}

std::string counted(std::uint64_t count, const std::string& noun) {
    std::string text = std::to_string(count) + " " + noun;
    if (count == 1 || noun.empty()) {
        return text;
    }
    auto ends = [&](const char* tail) {
        std::string suffix(tail);
        return noun.size() >= suffix.size() && noun.compare(noun.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (ends("s") || ends("x") || ends("ch") || ends("sh")) {
        return text + "es";
    }
    if (ends("y") && noun.size() > 1 && std::string("aeiou").find(noun[noun.size() - 2]) == std::string::npos) {
        text.pop_back();
        return text + "ies";
    }
    return text + "s";
}

Output::Output(OutputOptions options) : m_options(options) {}

bool Output::progress_allowed() const {
    return ::isatty(STDERR_FILENO) == 1 && m_options.progress && !m_options.json && !m_options.quiet;
}

void Output::say(const std::string& line) const {
    if (!m_options.json && !m_options.quiet) {
        Progress::instance().print_line(stdout, line);
    }
}

void Output::verdict(const std::string& line) const {
    if (!m_options.json) {
        Progress::instance().print_line(stdout, line);
    }
}

void Output::warn(const std::string& line) const {
    Progress::instance().print_line(stderr, "venvtx: warning: " + line);
}

void Output::debug(const std::string& line) const {
    if (m_options.verbose) {
        Progress::instance().print_line(stderr, "venvtx: " + line);
    }
}

void Output::document(nlohmann::json value) const {
    value["schema_version"] = k_json_schema_version;
    std::string text = json_text(value);
    std::fprintf(stdout, "%s\n", text.c_str());
    std::fflush(stdout);
}

} // namespace venvtx
