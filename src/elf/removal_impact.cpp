// analyze_removal: replay the loader with and without the removed files.
#include "venvtx/elf/removal_impact.hpp"

#include <algorithm>
#include <map>
#include <regex>

namespace venvtx {

namespace {

// "nvidia-cudnn-cu13" and "nvidia-cudnn-cu12" are twins: the same name but for a -cuNN suffix.
std::string twin_stem(const std::string& normalized) {
    static const std::regex k_cuda_suffix("-cu[0-9]+$");
    return std::regex_replace(normalized, k_cuda_suffix, "");
}

void add_unique(std::vector<std::string>& list, const std::string& value) {
    if (std::find(list.begin(), list.end(), value) == list.end()) {
        list.push_back(value);
    }
}

const char* kind_name(Resolution::Kind kind) {
    switch (kind) {
    case Resolution::Kind::venv:
        return "venv";
    case Resolution::Kind::system:
        return "system";
    case Resolution::Kind::missing:
        return "missing";
    }
    return "missing";
}

} // namespace

RemovalImpact analyze_removal(const LibraryIndex& index, const RemovalPlan& plan,
                              const std::vector<Distribution>& dists) {
    std::set<std::string> gone;
    for (const auto& planned : plan.files) {
        gone.insert(planned.path);
    }
    std::map<std::string, LostLibrary> lost;
    for (const auto& consumer : index.objects()) {
        if (gone.count(consumer.path) != 0) {
            continue;
        }
        for (const auto& soname : consumer.info.needed) {
            Resolution before = index.resolve(consumer, soname);
            if (before.kind != Resolution::Kind::venv || gone.count(before.path) == 0) {
                continue;
            }
            Resolution after = index.resolve(consumer, soname, gone);
            if (after.kind == Resolution::Kind::venv) {
                continue; // another venv file still provides it
            }
            LostLibrary& entry = lost[soname];
            entry.soname = soname;
            add_unique(entry.providers, before.path);
            if (const SharedObject* provider = index.find(before.path)) {
                add_unique(entry.provider_owners, provider->owner);
            }
            entry.consumers.push_back({consumer.path, consumer.owner, after});
        }
    }
    RemovalImpact impact;
    for (auto& [soname, entry] : lost) {
        impact.lost.push_back(std::move(entry));
    }
    std::set<std::string> removed_stems;
    for (const Distribution* target : plan.targets) {
        if (index.owners_with_libraries().count(target->name) != 0) {
            removed_stems.insert(twin_stem(target->normalized));
        } else {
            impact.no_shared_library.push_back({target->name, "ships no shared library"});
        }
    }
    for (const auto& dist : dists) {
        bool removed = std::find(plan.targets.begin(), plan.targets.end(), &dist) != plan.targets.end();
        if (!removed && dist.record_error) {
            impact.unanalysed.push_back({dist.name, *dist.record_error});
        }
        if (!removed && index.owners_with_libraries().count(dist.name) == 0 &&
            twin_stem(dist.normalized) != dist.normalized && removed_stems.count(twin_stem(dist.normalized))) {
            impact.no_shared_library.push_back(
                {dist.name, "stays, but ships no shared library (a metadata-only stub?): it will not "
                            "replace the removed " + twin_stem(dist.normalized) + " libraries"});
        }
    }
    return impact;
}

nlohmann::json removal_impact_json(const RemovalImpact& impact) {
    nlohmann::json lost = nlohmann::json::array();
    for (const auto& entry : impact.lost) {
        nlohmann::json consumers = nlohmann::json::array();
        for (const auto& consumer : entry.consumers) {
            consumers.push_back({{"path", consumer.path},
                                 {"owner", consumer.owner},
                                 {"after", kind_name(consumer.after.kind)},
                                 {"fallback", consumer.after.kind == Resolution::Kind::system
                                                  ? nlohmann::json(consumer.after.path)
                                                  : nlohmann::json()}});
        }
        lost.push_back({{"soname", entry.soname},
                        {"providers", entry.providers},
                        {"provider_owners", entry.provider_owners},
                        {"consumers", consumers}});
    }
    nlohmann::json stubs = nlohmann::json::array();
    for (const auto& note : impact.no_shared_library) {
        stubs.push_back({{"name", note.name}, {"note", note.note}});
    }
    nlohmann::json unanalysed = nlohmann::json::array();
    for (const auto& dist : impact.unanalysed) {
        unanalysed.push_back({{"name", dist.name}, {"reason", dist.reason}});
    }
    return {{"lost_libraries", lost},
            {"no_shared_library", stubs},
            {"unanalysed", unanalysed},
            {"probe_footprint", impact.footprint}};
}

} // namespace venvtx
