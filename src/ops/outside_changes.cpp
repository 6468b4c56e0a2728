// with_outside_changes: check again, drop what the transaction did itself (a path it journaled or
// one of its directories, what its switch relinked), name the rest.
#include "venvtx/ops/outside_changes.hpp"

#include "venvtx/report/outside_text.hpp"
#include "venvtx/store/switch_rows.hpp"

#include <set>

namespace venvtx {

namespace {

// `path` or one of its directories is in `paths`.
bool covered(const std::set<std::string>& paths, std::string path) {
    for (;;) {
        if (paths.count(path) > 0) {
            return true;
        }
        std::size_t slash = path.rfind('/');
        if (slash == std::string::npos) {
            return false;
        }
        path.resize(slash);
    }
}

// Whether a change the check found is the transaction's own: a path it journaled or one below
// it, or, below a unit it switched, a leaf whose ctime alone moved (linked into the shadow and
// unlinked from the old version).
class OwnChanges {
public:
    OwnChanges(Store& store, std::optional<std::int64_t> tx) {
        if (tx) {
            m_switched = switched_units(store.db(), *tx);
            for (const auto& entry : store.history().entries(*tx)) {
                m_journaled.insert(entry.path);
            }
        }
    }

    bool operator()(const LiveChange& change) const {
        return covered(m_journaled, change.path) || (change.ctime_alone && covered(m_switched, change.path));
    }

private:
    std::set<std::string> m_switched;
    std::set<std::string> m_journaled;
};

// What `check` found, less what transaction `tx` did itself.
std::vector<LiveChange> outside_of(const Context& context, Store& store, LiveCheck check,
                                   std::optional<std::int64_t> tx) {
    context.out.debug("checked the live venv after the command: " + std::to_string(check.paths) + " paths in " +
                      std::to_string(check.seconds) + " s, " + std::to_string(check.reread) +
                      " directories read again");
    OwnChanges own(store, tx);
    std::vector<LiveChange> outside;
    for (auto& change : check.changes) {
        if (!own(change)) {
            outside.push_back(std::move(change));
        }
    }
    return outside;
}

} // namespace

Outcome with_outside_changes(const Context& context, Store& store, const LiveScan& before, Outcome outcome) {
    if (outcome.extra.contains("changed_outside")) {
        return outcome; // a failed preview named them in its verdict
    }
    return with_outside_changes(context, store, changes_since(before, context.layout, context.store_root),
                                std::move(outcome));
}

Outcome with_outside_changes(const Context& context, Store& store, LiveCheck check, Outcome outcome) {
    if (outcome.extra.contains("changed_outside")) {
        return outcome;
    }
    std::vector<LiveChange> outside =
        outside_of(context, store, std::move(check), outcome.tx ? std::optional(outcome.tx->id) : std::nullopt);
    if (outside.empty()) {
        return outcome;
    }
    outcome.extra["changed_outside"] = outside_json(outside);
    context.out.verdict("warning: the live venv changed outside this transaction, and venvtx cannot undo it "
                        "(it kept no pre-image): " + outside_summary(outside));
    return outcome;
}

std::vector<LiveChange> changed_outside(const Context& context, Store& store, const LiveScan& before,
                                        std::optional<std::int64_t> tx) {
    return outside_of(context, store, changes_since(before, context.layout, context.store_root), tx);
}

} // namespace venvtx
