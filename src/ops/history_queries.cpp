// venv_status, diff_points, state_at and stamp.
#include "venvtx/ops/history_queries.hpp"

#include "venvtx/core/clock.hpp"
#include "venvtx/ops/history_session.hpp"
#include "venvtx/state/observe.hpp"
#include "venvtx/state/state_holds.hpp"
#include "venvtx/state/state_index.hpp"
#include "venvtx/state/venv_binding.hpp"
#include "venvtx/store/holds.hpp"

namespace venvtx {

StatusReport venv_status(const Context& context, bool files, bool untracked) {
    StatusReport report;
    if (!Store::exists(context.store_root)) {
        throw usage_error(no_history_message(context.store_root));
    }
    Store store(context.store_root, false);
    bind_store(store, context.layout);
    report.now = observe_state(context.layout, store.db());
    report.last_state = store.history().last_state();
    report.last_recorded_at = store.history().last_recorded_at();
    std::optional<VenvState> last = report.last_state ? load_state(store.db(), *report.last_state) : std::nullopt;
    if (last) {
        report.diff = diff_states(store.db(), *last, report.now, false, false);
    }
    HoldPolicy policy = hold_policy(context.layout, store);
    report.holds_unavailable = policy.unavailable;
    report.holds_copied = !policy.linkable && policy.copies;
    Holds holds(store.db(), store.root());
    for (const auto& dist : report.now.dists) {
        if (auto unheld = dist.record.empty() ? std::nullopt : holds.unheld(dist.record)) {
            ++report.held_dists;
            report.unheld_files += *unheld;
        }
    }
    if (files) {
        report.files = check_record_files(context.layout, store.db(), report.now);
    }
    if (untracked) {
        auto found = untracked_files(context.layout, store.db(), report.now);
        report.files.insert(report.files.end(), found.begin(), found.end());
    }
    return report;
}

PointDiff diff_points(const Context& context, const std::string& from, const std::string& to, bool with_files,
                      bool with_libs) {
    HistorySession session(context, false);
    Store& store = session.store();
    const VenvState& now = session.check()->now;
    PointDiff result{resolve_point(from, store, now), resolve_point(to, store, now), {}};
    result.diff = diff_states(store.db(), point_state(store, result.from, now), point_state(store, result.to, now),
                              with_files, with_libs);
    return result;
}

std::pair<HistoryPoint, VenvState> state_at(const Context& context, const std::string& point) {
    HistorySession session(context, false);
    Store& store = session.store();
    const VenvState& now = session.check()->now;
    HistoryPoint resolved = resolve_point(point, store, now);
    return {resolved, point_state(store, resolved, now)};
}

TransactionRecord stamp(const Context& context, const std::optional<std::string>& comment) {
    HistorySession session(context, true);
    RecordedEntry entry;
    entry.kind = "stamp";
    entry.argv = context.argv;
    entry.started_at = utc_now_iso8601();
    entry.finished_at = entry.started_at;
    entry.state_before = session.check()->now.id;
    entry.state_after = entry.state_before;
    entry.message = comment;
    entry.details = nlohmann::json{{"comment", comment ? nlohmann::json(*comment) : nlohmann::json()}};
    if (comment) {
        (*entry.details)["note"] = *comment;
    }
    History& history = session.store().history();
    return *history.find(history.record(entry));
}

} // namespace venvtx
