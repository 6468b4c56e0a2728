// A removal plan, said: what goes, which libraries lose their last provider, what breaks.
#include "venvtx/report/plan_text.hpp"

namespace venvtx {

void say_unmatched(const Output& out, const std::vector<UnmatchedPattern>& unmatched) {
    for (const auto& pattern : unmatched) {
        out.warn("skipping '" + pattern.pattern + "': no installed distribution matches it" +
                 (pattern.near ? " (did you mean '" + *pattern.near + "'?)" : "") + " (--strict refuses)");
    }
}

void say_removal_plan(const Output& out, const RemovalPlan& plan) {
    say_unmatched(out, plan.unmatched);
    out.say("remove " + counted(plan.targets.size(), "distribution") + ": " + counted(plan.files.size(), "file") +
            ", " + counted(plan.dirs.size(), "directory") + ", " + human_bytes(plan.bytes));
    for (const Distribution* dist : plan.targets) {
        out.say("  " + dist->name + " " + dist->version);
    }
    for (const auto& shared : plan.shared_kept) {
        out.say("  keeping " + shared.path + ": " + shared.kept_for + " also owns it");
    }
    for (const auto& outside : plan.outside) {
        out.warn("not removing '" + outside.path + "' (RECORD of " + outside.owner +
                 "): outside the venv (--strict refuses)");
    }
    if (!plan.missing.empty()) {
        out.debug(counted(plan.missing.size(), "RECORD path") + " already missing, e.g. " +
                  plan.missing.front());
    }
    for (const auto& broken : plan.broken_requirements) {
        out.verdict("warning: " + broken.dependent + " stays but requires " + broken.removed + " (" +
                    broken.requirement + ")");
    }
}

void say_removal_impact(const Output& out, const VenvLayout& layout, const RemovalImpact& impact) {
    if (!impact.lost.empty()) {
        out.say("shared libraries that would lose their last venv provider:");
    }
    for (const auto& lost : impact.lost) {
        std::string owners;
        for (const auto& owner : lost.provider_owners) {
            owners += (owners.empty() ? "" : ", ") + owner;
        }
        out.say("  " + lost.soname + " (from " + owners + ")");
        for (const auto& consumer : lost.consumers) {
            std::string after = consumer.after.kind == Resolution::Kind::system
                                    ? "falls back to " + consumer.after.path + ": not the same file"
                                    : std::string("would be missing");
            out.say("    needed by " + display_path(layout, consumer.path) + " (" + consumer.owner + "): " + after);
        }
    }
    for (const auto& note : impact.no_shared_library) {
        out.say("  " + note.name + ": " + note.note);
    }
    for (const auto& hit : impact.footprint) {
        out.say("  loaded by an earlier passing probe: " + hit);
    }
    for (const auto& dist : impact.unanalysed) {
        out.say("  libraries not analysed: " + dist.reason);
    }
}

nlohmann::json removal_plan_json(const RemovalPlan& plan, const RemovalImpact& impact) {
    nlohmann::json targets = nlohmann::json::array();
    for (const Distribution* dist : plan.targets) {
        targets.push_back({{"name", dist->name}, {"before", dist->version}, {"after", nullptr}});
    }
    nlohmann::json shared = nlohmann::json::array();
    for (const auto& file : plan.shared_kept) {
        shared.push_back({{"path", file.path}, {"kept_for", file.kept_for}});
    }
    nlohmann::json outside = nlohmann::json::array();
    for (const auto& path : plan.outside) {
        outside.push_back({{"path", path.path}, {"owner", path.owner}});
    }
    nlohmann::json broken = nlohmann::json::array();
    for (const auto& requirement : plan.broken_requirements) {
        broken.push_back({{"dependent", requirement.dependent},
                          {"requires", requirement.requirement},
                          {"removed", requirement.removed}});
    }
    nlohmann::json unmatched = nlohmann::json::array();
    for (const auto& pattern : plan.unmatched) {
        unmatched.push_back(pattern.pattern);
    }
    nlohmann::json json = {{"kind", "remove"},
                           {"broken_requirements", broken},
                           {"packages", targets},
                           {"files", plan.files.size()},
                           {"directories", plan.dirs.size()},
                           {"bytes", plan.bytes},
                           {"shared_kept", shared},
                           {"unmatched", unmatched},
                           {"outside", outside}};
    json.update(removal_impact_json(impact));
    return json;
}

} // namespace venvtx
