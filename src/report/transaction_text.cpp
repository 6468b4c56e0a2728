// A transaction record, rendered for `--json`, `log` and `show`.
#include "venvtx/report/transaction_text.hpp"

#include "venvtx/core/output.hpp"
#include "venvtx/probe/probe.hpp"
#include "venvtx/report/entry_text.hpp"
#include "venvtx/report/probe_text.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

namespace venvtx {

namespace {

// What a change asked for, from its command line: install's and remove's specs, run's command.
std::string asked_for(const std::vector<std::string>& argv, const std::string& kind) {
    static const std::set<std::string> k_valued = {"--installer", "--capture", "--probe", "--probe-timeout",
                                                   "--gpus", "--wait", "--preview", "--jobs"};
    auto at = std::find(argv.begin() + (argv.empty() ? 0 : 1), argv.end(), kind);
    auto dashes = std::find(at, argv.end(), "--");
    nlohmann::json asked = nlohmann::json::array();
    if (kind == "run") {
        asked = nlohmann::json(std::vector<std::string>(dashes == argv.end() ? dashes : dashes + 1, argv.end()));
    } else {
        for (auto it = at == argv.end() ? at : at + 1; it < dashes; ++it) {
            if (k_valued.count(*it) != 0) {
                ++it; // its value
            } else if (it->rfind("-", 0) != 0) {
                asked.push_back(*it);
            }
        }
    }
    std::string text = shell_command(asked);
    return text.size() > 48 ? text.substr(0, 45) + "..." : text;
}

nlohmann::json optional_json(const std::optional<std::string>& value) {
    return value ? nlohmann::json(*value) : nlohmann::json();
}

} // namespace

nlohmann::json transaction_json(const TransactionRecord& record) {
    nlohmann::json packages = nlohmann::json::array();
    for (const auto& change : record.packages) {
        packages.push_back({{"name", change.name},
                            {"before", optional_json(change.before)},
                            {"after", optional_json(change.after)}});
    }
    auto maybe_id = [](const std::optional<std::int64_t>& id) {
        return id ? nlohmann::json(*id) : nlohmann::json();
    };
    // The plan and a keep-going search are kept in `details` and shown under keys of their own.
    nlohmann::json details = record.details.value_or(nlohmann::json());
    auto take = [&](const char* key) {
        nlohmann::json value;
        if (details.is_object() && details.contains(key)) {
            value = details[key];
            details.erase(key);
        }
        return value;
    };
    nlohmann::json plan = take("plan");
    nlohmann::json keep_going = take("keep_going");
    nlohmann::json repair = take("repair"); // "fixed" or "still_failing": the venv failed the baseline
    if (details.is_object() && details.empty()) {
        details = nullptr;
    }
    return {{"id", record.id},
            {"kind", record.kind},
            {"state", to_string(record.state)},
            {"started_at", record.started_at},
            {"finished_at", optional_json(record.finished_at)},
            {"argv", record.argv},
            {"packages", packages},
            {"files",
             {{"added", record.files.added},
              {"removed", record.files.removed},
              {"modified", record.files.modified},
              {"bytes", record.files.bytes}}},
            {"baseline", record.baseline.value_or(nlohmann::json())},
            {"probe", record.probe.value_or(nlohmann::json())},
            {"live_probe", record.live_probe.value_or(nlohmann::json())},
            {"preview", record.preview.value_or(nlohmann::json())},
            {"undoes", maybe_id(record.undoes)},
            {"undone_by", maybe_id(record.undone_by)},
            {"message", optional_json(record.message)},
            {"restored", record.restored ? nlohmann::json(*record.restored) : nlohmann::json()},
            {"unrestored", record.unrestored},
            {"pruned_from", record.pruned_from ? nlohmann::json(to_string(*record.pruned_from)) : nlohmann::json()},
            {"state_before", optional_json(record.state_before)},
            {"state_after", optional_json(record.state_after)},
            {"user", record.user},
            {"host", record.host},
            {"venvtx_version", record.venvtx_version},
            {"plan", plan},
            {"keep_going", keep_going},
            {"repair", repair},
            {"details", details}};
}

std::string package_change_text(const PackageChange& change) {
    if (change.before && change.after && *change.before == *change.after) {
        return change.name + " " + *change.after + " (files changed)";
    }
    return change.name + " " + change.before.value_or("∅") + " → " + change.after.value_or("∅");
}

std::string transaction_line_header() {
    char head[96];
    std::snprintf(head, sizeof head, "%4s %s %-11s  %-8s  %-20s  %s", "ID", " ", "STATE", "KIND", "AT (UTC)",
                  "BY  WHAT (> made outside venvtx)");
    return head;
}

std::string transaction_line(const TransactionLine& tx) {
    constexpr std::size_t k_shown = 3;
    char head[96];
    // An outside change is marked as dnf marks an rpmdb altered outside it.
    std::snprintf(head, sizeof head, "%4lld %s %-11s  %-8s  %s  ", static_cast<long long>(tx.id),
                  tx.kind == "outside" ? ">" : " ", to_string(tx.state), tx.kind.c_str(), tx.at.c_str());
    std::string line = head + tx.user + "@" + tx.host + "  ";
    for (std::size_t i = 0; i < tx.packages.size() && i < k_shown; ++i) {
        line += (i ? ", " : "") + package_change_text(tx.packages[i]);
    }
    if (tx.packages.size() > k_shown) {
        line += " and " + std::to_string(tx.packages.size() - k_shown) + " more";
    }
    if (!tx.note.empty()) {
        line += (tx.packages.empty() ? "" : " ") + std::string("(") + tx.note + ")";
    } else if (tx.packages.empty() && !tx.reason.empty()) { // nothing changed: what was asked, and why not
        std::string asked = asked_for(tx.argv, tx.kind);
        line += (asked.empty() ? "" : asked + " ") + "(" + tx.reason.substr(0, tx.reason.find("; ")) + ")";
    } else if (tx.packages.empty()) {
        line += "-";
    }
    if (tx.undoes && tx.note.empty()) { // a rollback --to's note names all it undid
        line += " (undoes " + std::to_string(*tx.undoes) + ")";
    }
    if (tx.undone_by) {
        line += " (undone by " + std::to_string(*tx.undone_by) + ")";
    }
    return line;
}

std::string transaction_details(const TransactionRecord& record, const std::vector<Entry>& entries) {
    if (record.state == TxState::recorded || record.kind == "outside") { // an undone outside entry too
        return recorded_entry_details(record) +
               (record.undone_by ? "  undone by tx " + std::to_string(*record.undone_by) + "\n" : "");
    }
    std::string text = "tx " + std::to_string(record.id) + ": " + record.kind + ", " + to_string(record.state) +
                       "\n  started  " + record.started_at + "\n  finished " +
                       record.finished_at.value_or("-") + "\n" + entry_origin_lines(record) + "  command  ";
    text += shell_command(record.argv) + "\n  packages\n";
    for (const auto& change : record.packages) {
        text += "    " + package_change_text(change) + "\n";
    }
    text += "  files    " + std::to_string(record.files.removed) + " removed, " +
            std::to_string(record.files.added) + " added, " + std::to_string(record.files.modified) +
            " modified, " + human_bytes(static_cast<std::uint64_t>(record.files.bytes)) + " (" +
            std::to_string(entries.size()) + " paths in all)\n";
    if (record.restored) {
        text += *record.restored ? "  restored every path, checked\n"
                                 : "  NOT restored: " + counted(record.unrestored.size(), "path") + ":";
        for (const auto& path : record.unrestored) {
            text += " " + path;
        }
        text += *record.restored ? "" : "\n";
    }
    if (record.preview) {
        text += record.preview->value("used", false)
                    ? "  preview  the change was probed in a private view first\n"
                    : "  preview  not used: " + record.preview->value("reason", std::string()) + "\n";
    }
    bool previewed = record.preview && record.preview->value("used", false);
    const std::pair<const char*, const std::optional<nlohmann::json>*> probes[] = {
        {"baseline", &record.baseline},
        {previewed ? "probe (preview)" : "probe", &record.probe},
        {"probe (live)", &record.live_probe}};
    for (const auto& [which, report_ptr] : probes) {
        const auto& report = *report_ptr;
        if (!report) {
            continue;
        }
        ProbeReport probe = probe_report_from_json(*report);
        text += std::string("  ") + which + (probe.passed ? " passed" : " FAILED: " + probe.error.value_or(""));
        if (probe.gpus) {
            for (const auto& gpu : *probe.gpus) {
                text += "\n    GPU " + std::to_string(gpu.index) + " " + gpu.name + ": " +
                        (gpu.ok ? "ok" : gpu.error.value_or("failed"));
            }
        }
        if (!probe.passed && !probe.output_tail.empty()) {
            text += "\n" + probe_output_lines(probe);
        }
        text += "\n";
    }
    if (record.details && record.details->contains("keep_going")) {
        const nlohmann::json& search = (*record.details)["keep_going"];
        text += "  keep-going, " + counted(search.value("probes", 0), "probe") + ":\n";
        for (const auto& removed : search.value("removed", nlohmann::json::array())) {
            text += "    removed " + removed.value("name", std::string()) + "\n";
        }
        for (const auto& kept : search.value("kept", nlohmann::json::array())) {
            text += "    kept    " + kept.value("name", std::string()) + ": " + kept.value("reason", std::string()) + "\n";
        }
        for (const auto& attempt : search.value("attempts", nlohmann::json::array())) {
            text += "    attempt tx " + std::to_string(attempt.get<std::int64_t>()) + "\n";
        }
    }
    if (record.details && record.details->contains("part_of")) {
        text += "  part of  the --keep-going search of tx " +
                std::to_string((*record.details)["part_of"].get<std::int64_t>()) + "\n";
    }
    if (record.details && record.details->contains("repair")) {
        text += (*record.details)["repair"] == "fixed" ? "  repair   the venv failed the probe before, and passed it after\n"
                                                       : "  repair   the venv failed the probe before and after: not kept\n";
    }
    if (record.details && record.details->contains("probe_at_fault")) {
        text += "  probe    " + (*record.details)["probe_at_fault"].get<std::string>() + "\n";
    }
    if (record.message) {
        text += "  note     " + *record.message + "\n";
    }
    if (record.undone_by) {
        text += "  undone by tx " + std::to_string(*record.undone_by) + "\n";
    }
    return text;
}

} // namespace venvtx
