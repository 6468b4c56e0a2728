// watch: inotify on site-packages, a quiet period, then the outside check of any history command.
#include "venvtx/ops/watch.hpp"

#include "venvtx/core/dir_events.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/ops/history_session.hpp"
#include "venvtx/report/transaction_text.hpp"

#include <csignal>
#include <cstdio>

namespace venvtx {

namespace {

volatile std::sig_atomic_t g_stop = 0;

void on_stop(int) { g_stop = 1; }

// SIGINT and SIGTERM end the watch between two records: poll(2) returns EINTR (no SA_RESTART).
void stop_on_signals() {
    struct sigaction action {};
    action.sa_handler = on_stop;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);
}

// The outside check, as `log` runs it; false when another venvtx (or uv) held the locks, or a
// transaction is unfinished: then nothing was recorded, and it is tried again.
bool record(const Context& context, int& recorded) {
    HistorySession session(context, false);
    if (!session.recorded()) {
        return false;
    }
    if (auto id = session.check()->outside) {
        auto entry = session.store().history().find(*id);
        std::string what;
        for (const auto& change : entry->packages) {
            what += (what.empty() ? "" : ", ") + package_change_text(change);
        }
        context.out.verdict("entry " + std::to_string(*id) + ": " + what + " (outside venvtx)");
        std::fflush(stdout); // a line as it happens: to a pipe, a journal
        ++recorded;
    }
    return true;
}

} // namespace

int watch(const Context& context, const WatchOptions& options) {
    if (context.out.json()) {
        throw usage_error("watch writes a line per change it records, not a JSON document: drop --json "
                          "(`venvtx --json log` reads what it recorded)");
    }
    if (options.quiet_s < 0.05 || options.quiet_s > 3600) {
        throw usage_error("--quiet-for must be between 0.05 and 3600 seconds");
    }
    stop_on_signals();
    DirEvents events(context.layout.site_packages);
    { HistorySession first(context, true, 10.0); } // the store, and whatever changed before the watch
    context.out.say("watching " + context.layout.root.string() + " (Ctrl-C stops)");
    std::fflush(stdout);
    int quiet_ms = static_cast<int>(options.quiet_s * 1000);
    int recorded = 0;
    bool owed = false; // a change seen but not recorded yet (the locks were held)
    while (!g_stop) {
        if (!owed && !events.wait(-1)) {
            continue; // a signal
        }
        while (!g_stop && events.wait(quiet_ms)) {
        }
        if (!g_stop) {
            owed = !record(context, recorded);
        }
    }
    context.out.say("stopped watching: " + counted(recorded, "change") + " recorded");
    return 0;
}

} // namespace venvtx
