// What a command that reads the history (log, show, status, diff, freeze, verify) or adds an
// entry of its own (stamp, exec) opens first: the store, with any change made outside venvtx
// since the last command recorded as an `outside` entry. That needs both locks at once and no
// unfinished transaction; while another venvtx holds them (mid-change), the venv is only
// observed, and nothing is recorded.
#pragma once

#include "venvtx/state/state_check.hpp"
#include "venvtx/state/state_diff.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/txn/context.hpp"

#include <optional>

namespace venvtx {

// A change made outside venvtx that a session saw but could not record, and why.
struct UnrecordedChange {
    StateDiff diff;
    std::string why;
};

// "no venvtx history yet in STORE", and how to start one.
std::string no_history_message(const std::filesystem::path& store_root);

class HistorySession {
public:
    // `create`: make the store when there is none (a command that records); it needs the locks,
    // waiting up to `wait_s` for them (exit 5 past that).
    HistorySession(const Context& context, bool create, double wait_s = 0.0);

    bool has_store() const { return m_store.has_value(); }
    // Throws a usage Error ("no venvtx history yet") when there is no store.
    Store& store();
    // The venv's state now; nullopt without a store.
    const std::optional<StateCheck>& check() const { return m_check; }
    // Whether the outside check could record (both locks were free, nothing unfinished).
    bool recorded() const { return m_recorded; }
    // Where it could not: the venv's state now against the last recorded one, when they differ.
    std::optional<UnrecordedChange> unrecorded();

private:
    std::filesystem::path m_root;
    std::optional<Store> m_store;
    std::optional<MutationLock> m_lock;
    std::optional<StateCheck> m_check;
    bool m_recorded = false;
    std::string m_why_not;  // why nothing was recorded
};

} // namespace venvtx
