// The three output channels: results on stdout (human text, or one JSON document under --json),
// a debug log on stderr behind -v, and one overprinted progress line on a TTY only.
#pragma once

#include <string>

namespace venvtx {

struct OutputOptions {
    bool json = false;
    bool quiet = false;
    bool verbose = false;
    bool progress = true;
};

class Output {
public:
    explicit Output(OutputOptions options);

    bool json() const { return m_options.json; }
    // A line of human-readable result; dropped under --json and --quiet.
    void say(const std::string& line) const;
    // A human line that matters even under --quiet (a verdict); dropped under --json.
    void verdict(const std::string& line) const;
    // Debug detail on stderr, only with -v.
    void debug(const std::string& line) const;
    // Overprinted progress on stderr; only on a TTY, never under --json.
    void progress(const std::string& line) const;
    void end_progress() const;
    // The one JSON document of this run (under --json).
    void document(const std::string& json_text) const;

private:
    OutputOptions m_options;
    bool m_tty = false;
    mutable bool m_progress_shown = false;
};

} // namespace venvtx
