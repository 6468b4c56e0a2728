// The output channels: results on stdout (human text, or one JSON document under --json) and a
// debug log on stderr behind -v; both print around the progress line (core/progress.hpp).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace venvtx {

// The version of the documents --json prints (docs/json.md): raised when a key changes meaning
// or goes away; a new key does not raise it.
constexpr int k_json_schema_version = 1;

struct OutputOptions {
    bool json = false;
    bool quiet = false;
    bool verbose = false;
    bool progress = true;
};

// "1.2 GB" (decimal units, one decimal; "512 B").
std::string human_bytes(std::uint64_t bytes);
// "1 file", "2 files", "3 processes", "0 directories": a count and its English noun.
std::string counted(std::uint64_t count, const std::string& noun);

class Output {
public:
    explicit Output(OutputOptions options);

    bool json() const { return m_options.json; }
    bool quiet() const { return m_options.quiet; }
    bool verbose() const { return m_options.verbose; }
    // A line of human-readable result; dropped under --json and --quiet.
    void say(const std::string& line) const;
    // A human line that matters even under --quiet (a verdict); dropped under --json.
    void verdict(const std::string& line) const;
    // "venvtx: warning: ..." on stderr, under --json and --quiet too.
    void warn(const std::string& line) const;
    // Debug detail on stderr, only with -v.
    void debug(const std::string& line) const;
    // Whether a progress line may be drawn: stderr is a TTY, and not --json, -q or --no-progress.
    bool progress_allowed() const;
    // The one JSON document of this run (under --json): an object, given its schema_version.
    void document(nlohmann::json value) const;  // written by json_text()

private:
    OutputOptions m_options;
};

} // namespace venvtx
