// with_outside_changes: scan again, drop what the journal covers (a path or one of its
// directories), name the rest.
#include "venvtx/ops/outside_changes.hpp"

#include "venvtx/report/outside_text.hpp"
#include "venvtx/store/switch_rows.hpp"

#include <chrono>
#include <set>

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

Outcome with_outside_changes(const Context& context, Store& store, const LiveScan& before, Outcome outcome) {
    if (outcome.extra.contains("changed_outside")) {
        return outcome; // a failed preview named them in its verdict
    }
    std::vector<LiveChange> outside =
        changed_outside(context, store, before, outcome.tx ? std::optional(outcome.tx->id) : std::nullopt);
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
    auto started = std::chrono::steady_clock::now();
    std::set<std::string> relinked = tx ? switched_units(store.db(), *tx) : std::set<std::string>();
    LiveCheck check = changes_since(before, context.layout, context.store_root, relinked);
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
    context.out.debug("checked the live venv after the command: " + std::to_string(check.paths) + " paths in " +
                      std::to_string(took.count()) + " s, " + std::to_string(check.reread) +
                      " directories read again");
    std::set<std::string> journaled;
    if (tx) {
        for (const auto& entry : store.history().entries(*tx)) {
            journaled.insert(entry.path);
        }
    }
    std::vector<LiveChange> outside;
    for (const auto& change : check.changes) {
        if (!covered(journaled, change.path)) {
            outside.push_back(change);
        }
    }
    return outside;
}

} // namespace venvtx
