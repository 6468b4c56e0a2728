// resolve_point: entry ids, carets, times and `now` to state ids.
#include "venvtx/state/history_point.hpp"

#include "venvtx/core/clock.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/state/state_index.hpp"

#include <charconv>
#include <ctime>

namespace venvtx {

namespace {

std::optional<std::int64_t> whole_number(std::string_view text) {
    std::int64_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < 0) {
        return std::nullopt;
    }
    return value;
}

Error bad_point(const std::string& text, const std::string& why) {
    return usage_error("point '" + text + "': " + why +
                       " (a point is an entry id N, N^ for before it, 0, @TIME such as @2026-11-30T14:00 or @-2h, "
                       "or now)");
}

HistoryPoint at_entry(Store& store, const std::string& text, std::int64_t id, bool before) {
    auto record = store.history().find(id);
    if (!record) {
        throw bad_point(text, "no entry " + std::to_string(id) + " (see `venvtx log`)");
    }
    // An entry that never finished keeps no after-state: what was before it is what it left.
    std::optional<std::string> state = before ? record->state_before : record->state_after.has_value() ? record->state_after : record->state_before;
    if (!state) {
        throw bad_point(text, "entry " + std::to_string(id) + " was recorded before venvtx kept states");
    }
    return {text, *state, id};
}

HistoryPoint at_time(Store& store, const std::string& text, std::int64_t when) {
    // The newest entry that had ended by then; before any, the first entry's before-state.
    Statement newest = store.db().prepare(
        "SELECT id, COALESCE(state_after, state_before) FROM transactions WHERE finished_at IS NOT NULL AND "
        "finished_at <= ? AND COALESCE(state_after, state_before) IS NOT NULL ORDER BY id DESC LIMIT 1");
    newest.bind(1, utc_iso8601(when));
    if (newest.step()) {
        return {text, newest.text(1), newest.integer(0)};
    }
    Statement first = store.db().prepare(
        "SELECT id, state_before, started_at FROM transactions WHERE state_before IS NOT NULL ORDER BY id LIMIT 1");
    if (first.step() && first.text(2) <= utc_iso8601(when)) {
        return {text, first.text(1), std::nullopt};
    }
    throw bad_point(text, "the history records no state that early");
}

} // namespace

HistoryPoint resolve_point(const std::string& text, Store& store, const VenvState& now) {
    if (text == "now") {
        return {text, now.id, std::nullopt};
    }
    if (!text.empty() && text[0] == '@') {
        auto when = parse_time_point(text.substr(1));
        if (!when) {
            throw bad_point(text, "not a time (at most 100 years back)");
        }
        return at_time(store, text, *when);
    }
    bool before = !text.empty() && text.back() == '^';
    auto id = whole_number(before ? std::string_view(text).substr(0, text.size() - 1) : std::string_view(text));
    if (!id) {
        throw bad_point(text, "not a point");
    }
    if (*id == 0 && !before) {
        Statement first = store.db().prepare(
            "SELECT id FROM transactions WHERE state_before IS NOT NULL ORDER BY id LIMIT 1");
        if (!first.step()) {
            throw bad_point(text, "the history records no state yet");
        }
        return at_entry(store, text, first.integer(0), true);
    }
    return at_entry(store, text, *id, before);
}

VenvState point_state(Store& store, const HistoryPoint& point, const VenvState& now) {
    if (point.state == now.id) {
        return now;
    }
    auto state = load_state(store.db(), point.state);
    if (!state) {
        throw Error(ExitCode::internal, "store index: state " + short_state_id(point.state) + " of point '" +
                                            point.text + "' is missing");
    }
    return *state;
}

} // namespace venvtx
