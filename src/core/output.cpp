// Output: routing of results, debug log and progress to their channels.
#include "venvtx/core/output.hpp"

#include <cstdio>
#include <unistd.h>

namespace venvtx {

Output::Output(OutputOptions options) : m_options(options) {
    m_tty = ::isatty(STDERR_FILENO) == 1 && options.progress && !options.json && !options.quiet;
}

void Output::say(const std::string& line) const {
    if (!m_options.json && !m_options.quiet) {
        end_progress();
        std::fprintf(stdout, "%s\n", line.c_str());
        std::fflush(stdout);
    }
}

void Output::verdict(const std::string& line) const {
    if (!m_options.json) {
        end_progress();
        std::fprintf(stdout, "%s\n", line.c_str());
        std::fflush(stdout);
    }
}

void Output::debug(const std::string& line) const {
    if (m_options.verbose) {
        end_progress();
        std::fprintf(stderr, "venvtx: %s\n", line.c_str());
    }
}

void Output::progress(const std::string& line) const {
    if (m_tty) {
        std::fprintf(stderr, "\r\033[K%s", line.c_str());
        std::fflush(stderr);
        m_progress_shown = true;
    }
}

void Output::end_progress() const {
    if (m_progress_shown) {
        std::fprintf(stderr, "\r\033[K");
        std::fflush(stderr);
        m_progress_shown = false;
    }
}

void Output::document(const std::string& json_text) const {
    std::fprintf(stdout, "%s\n", json_text.c_str());
    std::fflush(stdout);
}

} // namespace venvtx
