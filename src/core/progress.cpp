// Progress: a phase stack counted by any thread, drawn by one ticker thread under one mutex.
#include "venvtx/core/progress.hpp"

#include "venvtx/core/output.hpp"

#include <atomic>
#include <chrono>
#include <pthread.h>
#include <sys/ioctl.h>
#include <unistd.h>

namespace venvtx {

namespace {

// Shown only once a phase has lasted this long: quick work never flickers a line.
constexpr double k_show_after_s = 0.3;
constexpr auto k_tick = std::chrono::milliseconds(100);

std::atomic<bool> g_enabled{false};
std::atomic<bool> g_timings{false};

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int terminal_columns() {
    winsize size{};
    if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
        return size.ws_col;
    }
    return 80;
}

} // namespace

Progress& Progress::instance() {
    static Progress progress;
    static bool registered = [] {
        // A forked child (a preview worker, a trap) never draws: the parent owns the line, and the
        // mutex may have been held by the ticker at the fork.
        ::pthread_atfork(nullptr, nullptr, [] {
            g_enabled.store(false);
            g_timings.store(false);
        });
        return true;
    }();
    (void)registered;
    return progress;
}

void Progress::set_enabled(bool enabled) {
    std::lock_guard<std::mutex> guard(m_mutex);
    g_enabled.store(enabled);
    if (enabled && !m_ticker.joinable()) {
        m_ticker = std::thread([this] { tick_loop(); });
    }
}

void Progress::set_timings(bool timings) { g_timings.store(timings); }

bool Progress::active() const { return g_enabled.load() || g_timings.load(); }

Progress::~Progress() {
    {
        std::lock_guard<std::mutex> guard(m_mutex);
        m_stopping = true;
        if (g_enabled.load()) {
            clear_locked();
        }
    }
    m_wake.notify_all();
    if (m_ticker.joinable()) {
        m_ticker.join();
    }
}

void Progress::print_line(std::FILE* stream, const std::string& line) {
    if (!g_enabled.load()) {
        std::fprintf(stream, "%s\n", line.c_str());
        std::fflush(stream);
        return;
    }
    std::lock_guard<std::mutex> guard(m_mutex);
    clear_locked();
    std::fprintf(stream, "%s\n", line.c_str());
    std::fflush(stream);
}

Progress::Phase::Phase(std::string label, std::uint64_t total_items, const char* unit, std::uint64_t total_bytes) {
    Progress::instance().begin(std::move(label), total_items, unit, total_bytes);
}

Progress::Phase::~Phase() { Progress::instance().end(); }

void Progress::advance(std::uint64_t items, std::uint64_t bytes) {
    Progress& progress = instance();
    if (!progress.active()) {
        return;
    }
    std::lock_guard<std::mutex> guard(progress.m_mutex);
    if (!progress.m_phases.empty()) {
        progress.m_phases.back().items += items;
        progress.m_phases.back().bytes += bytes;
    }
}

void Progress::begin(std::string label, std::uint64_t total_items, const char* unit, std::uint64_t total_bytes) {
    if (!active()) {
        return;
    }
    for (char& c : label) { // a probe's code may hold newlines: one line it stays
        c = static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
    }
    std::lock_guard<std::mutex> guard(m_mutex);
    m_phases.push_back(State{std::move(label), unit, total_items, total_bytes, 0, 0, now_s()});
}

void Progress::end() {
    if (!active()) {
        return;
    }
    std::lock_guard<std::mutex> guard(m_mutex);
    if (m_phases.empty()) {
        return;
    }
    if (g_timings.load()) {
        clear_locked();
        std::fprintf(stderr, "venvtx: %s\n", describe(m_phases.back()).c_str());
    }
    m_phases.pop_back();
    if (m_phases.empty()) {
        clear_locked();
    }
}

void Progress::tick_loop() {
    std::unique_lock<std::mutex> lock(m_mutex);
    while (!m_stopping) {
        m_wake.wait_for(lock, k_tick);
        if (!m_stopping && g_enabled.load() && !m_phases.empty() &&
            now_s() - m_phases.back().started >= k_show_after_s) {
            draw_locked();
        }
    }
}

std::string Progress::describe(const State& phase) {
    std::string line = phase.label;
    if (phase.total_items > 0) {
        line += " " + std::to_string(phase.items) + "/" + std::to_string(phase.total_items) + " " + phase.unit;
    }
    if (phase.total_bytes > 0) {
        line += ", " + human_bytes(phase.bytes) + " of " + human_bytes(phase.total_bytes);
    } else if (phase.bytes > 0) {
        line += ", " + human_bytes(phase.bytes);
    }
    char elapsed[32];
    std::snprintf(elapsed, sizeof elapsed, " (%.2f s)", now_s() - phase.started);
    return line + elapsed;
}

void Progress::draw_locked() {
    std::string line = "venvtx: " + describe(m_phases.back());
    int columns = terminal_columns();
    if (static_cast<int>(line.size()) >= columns) {
        std::size_t keep = columns > 1 ? static_cast<std::size_t>(columns - 1) : 0;
        while (keep > 0 && (static_cast<unsigned char>(line[keep]) & 0xC0) == 0x80) {
            --keep; // never half a UTF-8 character
        }
        line.resize(keep);  // a wrapped line could not be overprinted
    }
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
    m_shown = true;
}

void Progress::clear_locked() {
    if (m_shown) {
        std::fprintf(stderr, "\r\033[K");
        std::fflush(stderr);
        m_shown = false;
    }
}

} // namespace venvtx
