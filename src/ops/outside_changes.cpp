// OutsideCheck: scan again, drop what the journal covers (a path or one of its directories),
// name the rest.
#include "venvtx/ops/outside_changes.hpp"

#include "venvtx/core/signals_blocked.hpp"
#include "venvtx/report/outside_text.hpp"
#include "venvtx/store/switch_rows.hpp"

namespace venvtx {

namespace {

bool covered(const std::set<std::string>& journaled, std::string path) {
    for (;;) {
        if (journaled.count(path) > 0) {
            return true;
        }
        std::size_t slash = path.rfind('/');
        if (slash == std::string::npos) {
            return false;
        }
        path.resize(slash);
    }
}

} // namespace

OutsideCheck::OutsideCheck(const Context& context, Store& store, const LiveScan& before,
                           std::optional<std::int64_t> tx)
    : m_context(context) {
    std::set<std::string> relinked;
    if (tx) {
        relinked = switched_units(store.db(), *tx);
        for (const auto& entry : store.history().entries(*tx)) {
            m_journaled.insert(entry.path);
        }
    }
    SignalsBlocked quiet;
    m_check = std::async(std::launch::async, [&before, layout = context.layout, store_root = context.store_root,
                                              relinked = std::move(relinked)] {
        return changes_since(before, layout, store_root, relinked);
    });
}

std::vector<LiveChange> OutsideCheck::get() {
    LiveCheck check = m_check.get();
    m_context.out.debug("checked the live venv after the command: " + std::to_string(check.paths) + " paths in " +
                        std::to_string(check.seconds) + " s, " + std::to_string(check.reread) +
                        " directories read again");
    std::vector<LiveChange> outside;
    for (const auto& change : check.changes) {
        if (!covered(m_journaled, change.path)) {
            outside.push_back(change);
        }
    }
    return outside;
}

Outcome with_outside_changes(const Context& context, Store& store, const LiveScan& before,
                             std::optional<OutsideCheck>& started, Outcome outcome) {
    if (outcome.extra.contains("changed_outside")) {
        return outcome; // a failed preview named them in its verdict
    }
    if (!started) {
        started.emplace(context, store, before, outcome.tx ? std::optional(outcome.tx->id) : std::nullopt);
    }
    std::vector<LiveChange> outside = started->get();
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
    return OutsideCheck(context, store, before, tx).get();
}

} // namespace venvtx
