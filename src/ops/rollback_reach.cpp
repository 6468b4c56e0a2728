// Refusals of a rollback that would not reach what it aims at, with the repair each names.
#include "venvtx/ops/rollback_reach.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/report/transaction_text.hpp"
#include "venvtx/state/history_point.hpp"
#include "venvtx/venv/names.hpp"

#include <map>

namespace venvtx {

namespace {

using Versions = std::map<std::string, std::optional<std::string>>;  // by normalized name

std::string quoted_spec(const std::string& name, const std::string& version) {
    return "'" + name + "==" + version + "'";
}

// The commands that bring each distribution of `wanted` to its version there (∅: removed).
std::string repair_commands(const std::map<std::string, std::pair<std::string, std::optional<std::string>>>& wanted) {
    std::string install;
    std::string remove;
    for (const auto& [normalized, named] : wanted) {
        const auto& [name, version] = named;
        if (version) {
            install.append(" ").append(quoted_spec(name, *version)); // appended: g++ 12's false -Wrestrict
        } else {
            remove.append(" ").append(name);
        }
    }
    std::string text;
    if (!install.empty()) {
        text = "`venvtx install" + install + "` (from your index, or add `-- --find-links DIR`)";
    }
    if (!remove.empty()) {
        text += (text.empty() ? "" : " and ") + std::string("`venvtx remove") + remove + "`";
    }
    return text;
}

std::vector<TransactionRecord> outside_entries_after(Store& store, std::int64_t since) {
    std::vector<TransactionRecord> found;
    for (const auto& record : store.history().list(std::nullopt)) {
        if (record.kind == "outside" && !record.undone_by && record.id > since) {
            found.push_back(record);
        }
    }
    return found; // newest first
}

// What undoes `entries` (newest first): each distribution back to its version before the oldest.
std::string repair_of(const std::vector<TransactionRecord>& entries) {
    std::map<std::string, std::pair<std::string, std::optional<std::string>>> wanted;
    std::map<std::string, std::optional<std::string>> now;
    for (const auto& record : entries) {
        for (const auto& change : record.packages) {
            std::string normalized = normalize_name(change.name);
            wanted[normalized] = {change.name, change.before};
            now.try_emplace(normalized, change.after);
        }
    }
    std::erase_if(wanted, [&](const auto& item) { return now[item.first] == item.second.second; });
    return repair_commands(wanted);
}

std::string changes_text(const TransactionRecord& record) {
    std::string what;
    for (const auto& change : record.packages) {
        what += (what.empty() ? "" : ", ") + package_change_text(change);
    }
    return what;
}

std::string entries_text(const std::vector<TransactionRecord>& entries) {
    std::string text;
    for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
        text += (text.empty() ? "" : "; ") + std::string("entry ") + std::to_string(it->id) +
                " changed the venv outside venvtx (" + changes_text(*it) + ")";
    }
    return text;
}

nlohmann::json ids_json(const std::vector<TransactionRecord>& entries) {
    nlohmann::json ids = nlohmann::json::array();
    for (const auto& record : entries) {
        ids.push_back(record.id);
    }
    return ids;
}

Versions versions_of(const VenvState& state) {
    Versions versions;
    for (const auto& dist : state.dists) {
        versions[dist.normalized] = dist.version;
    }
    return versions;
}

} // namespace

std::string outside_since(Store& store, std::int64_t since) {
    std::string text = entries_text(outside_entries_after(store, since));
    return text.empty() ? text : " (" + text + ")";
}

void refuse_newest_outside(Store& store, const std::optional<TransactionRecord>& target, bool force) {
    auto outside = outside_entries_after(store, target ? target->id : 0);
    if (outside.empty() || force) {
        return;
    }
    // One transaction puts back the versions before the oldest of them (the installer's bytes).
    std::string repair = "`venvtx sync --to " + std::to_string(outside.back().id) + "^`";
    std::string by_hand = repair_of(outside);
    repair += by_hand.empty() ? "" : ", or " + by_hand;
    std::string what = outside.size() == 1 ? "the newest change, entry " + std::to_string(outside.front().id) +
                                                 ", was made outside venvtx (" + changes_text(outside.front()) + ")"
                                           : "the newest changes were made outside venvtx: " + entries_text(outside) + ",";
    throw Error(ExitCode::usage, "outside_change",
                what + " and venvtx holds no copy of what it removed or replaced; nothing was changed" +
                    ". To undo it: " + repair +
                    (target ? "; to undo tx " + std::to_string(target->id) + " (" + target->kind +
                                  ") anyway: `venvtx rollback " + std::to_string(target->id) + "`"
                            : ""),
                {{"outside", ids_json(outside)}, {"tx", target ? nlohmann::json(target->id) : nlohmann::json()}});
}

void refuse_outside_entry(const TransactionRecord& entry) {
    std::string repair = repair_of({entry});
    throw Error(ExitCode::usage, "outside_change",
                "entry " + std::to_string(entry.id) + " was made outside venvtx (" + changes_text(entry) +
                    ") and venvtx holds no copy of what it removed or replaced; nothing was changed" +
                    (repair.empty() ? "" : ". To undo it: " + repair),
                {{"tx", entry.id}, {"outside", nlohmann::json::array({entry.id})}});
}

std::string refuse_unreachable(Store& store, const VenvState& now, std::int64_t to,
                               const std::vector<TransactionRecord>& undo, bool force) {
    VenvState target;
    try {
        target = point_state(store, resolve_point(std::to_string(to), store, now), now);
    } catch (const Error&) {
        return ""; // no state recorded at N (an older history): nothing to compare
    }
    Versions predicted = versions_of(now);
    std::map<std::string, std::string> names;
    for (const auto& dist : now.dists) {
        names[dist.normalized] = dist.name;
    }
    for (const auto& record : undo) { // newest first: the oldest one's before-version stays
        for (const auto& change : record.packages) {
            std::string normalized = normalize_name(change.name);
            predicted[normalized] = change.before;
            names.try_emplace(normalized, change.name);
        }
    }
    Versions wanted = versions_of(target);
    for (const auto& dist : target.dists) {
        names[dist.normalized] = dist.name;
    }
    std::map<std::string, std::pair<std::string, std::optional<std::string>>> differ;
    std::string what;
    for (const auto& [normalized, name] : names) {
        auto would = predicted.count(normalized) ? predicted[normalized] : std::nullopt;
        auto should = wanted.count(normalized) ? wanted[normalized] : std::nullopt;
        if (would != should) {
            differ[normalized] = {name, should};
            what += (what.empty() ? "" : ", ") + name + " " + would.value_or("∅") + " (entry " + std::to_string(to) +
                    " has " + should.value_or("∅") + ")";
        }
    }
    if (differ.empty()) {
        return "";
    }
    std::string text = "it would leave " + what;
    auto outside = outside_entries_after(store, to);
    std::string cause = entries_text(outside);
    if (!cause.empty()) {
        text += ", as " + cause + " and venvtx holds no copy of that";
    }
    if (force) {
        return text;
    }
    throw Error(ExitCode::usage, "not_reachable",
                "refusing to roll back to entry " + std::to_string(to) + ": " + text +
                    "; nothing was changed. To reach it: `venvtx sync --to " + std::to_string(to) +
                    "` (its versions through the installer), or " +
                    (undo.empty() ? "" : "`venvtx rollback --to " + std::to_string(to) + " --force`, then ") +
                    repair_commands(differ),
                {{"to", to}, {"outside", ids_json(outside)}});
}

} // namespace venvtx
