// The progress line: one line on stderr, overprinted in place, for anything that can take over
// a second (capture, hashing, restore, probes, waiting for a lock). Drawn only when enabled (a
// TTY, and not --json, -q or --no-progress), only once a phase has run a moment, and by a ticker
// thread, so a phase that waits on a child or a lock still shows its elapsed time.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace venvtx {

class Progress {
public:
    static Progress& instance();

    // Off by default; the CLI turns it on for a TTY. A forked worker turns it off.
    void set_enabled(bool enabled);
    // Under -v each phase, when it ends, logs what it did and how long it took (on any stderr).
    void set_timings(bool timings);
    // Prints a line on `stream` with the progress line cleared first (it is redrawn on the next
    // tick), so results and progress never share a line.
    void print_line(std::FILE* stream, const std::string& line);

    // A named stretch of work; `unit` names what total_items counts ("files", "paths"), empty
    // for a phase with no count (a probe, a lock wait). Bytes are shown when total_bytes > 0.
    class Phase {
    public:
        Phase(std::string label, std::uint64_t total_items = 0, const char* unit = "",
              std::uint64_t total_bytes = 0);
        ~Phase();
        Phase(const Phase&) = delete;
        Phase& operator=(const Phase&) = delete;
    };
    // Adds to the innermost phase's counts; safe from any thread.
    static void advance(std::uint64_t items, std::uint64_t bytes = 0);

    ~Progress();

private:
    Progress() = default;
    bool active() const;
    void begin(std::string label, std::uint64_t total_items, const char* unit, std::uint64_t total_bytes);
    void end();
    void tick_loop();
    void draw_locked();
    void clear_locked();

    struct State {
        std::string label;
        std::string unit;
        std::uint64_t total_items = 0;
        std::uint64_t total_bytes = 0;
        std::uint64_t items = 0;
        std::uint64_t bytes = 0;
        double started = 0;
    };

    static std::string describe(const State& phase);

    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::thread m_ticker;
    bool m_stopping = false;
    bool m_shown = false;
    std::vector<State> m_phases;  // nested phases: the innermost is shown and counted
};

} // namespace venvtx
