// explain: provider/consumer answers built on LibraryIndex and the removal impact.
#include "venvtx/ops/why.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/elf/removal_impact.hpp"
#include "venvtx/venv/inventory.hpp"
#include "venvtx/venv/names.hpp"

#include <algorithm>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

std::string describe(const VenvLayout& layout, const Resolution& resolution) {
    switch (resolution.kind) {
    case Resolution::Kind::venv:
        return display_path(layout, resolution.path);
    case Resolution::Kind::system:
        return resolution.path + " (system)";
    case Resolution::Kind::missing:
        return "missing";
    }
    return "missing";
}

nlohmann::json resolution_json(const Resolution& resolution) {
    const char* kinds[] = {"venv", "system", "missing"};
    return {{"kind", kinds[static_cast<int>(resolution.kind)]},
            {"path", resolution.path.empty() ? nlohmann::json() : nlohmann::json(resolution.path)}};
}

// The name a Requires-Dist line requires ("torch>=2; extra == 'x'" -> "torch").
std::string required_name(const std::string& requirement) {
    return normalize_name(requirement.substr(0, requirement.find_first_of(" ;<>=!~[(@")));
}

class Explainer {
public:
    Explainer(const Context& context)
        : m_context(context), m_inventory(scan_inventory(context.layout)),
          m_index(context.layout, m_inventory, context.store_root, SystemLibraries::load()) {}

    WhyAnswer answer(const std::string& name) {
        for (const auto& dist : m_inventory) {
            if (dist.normalized == normalize_name(name)) {
                return distribution(dist);
            }
        }
        if (auto file = as_file(name)) {
            return this->file(*file);
        }
        if (is_shared_library_name(name) || !m_index.providers(name).empty()) {
            return soname(name);
        }
        throw usage_error("nothing named '" + name + "' here: not an installed distribution, a file in the "
                          "venv, or a shared library name");
    }

private:
    std::optional<std::string> as_file(const std::string& name) const {
        std::vector<stdfs::path> candidates = {stdfs::absolute(name), m_context.layout.root / name};
        for (const auto& site : m_context.layout.site_packages) {
            candidates.push_back(site / name);
        }
        for (const auto& candidate : candidates) {
            std::error_code ec;
            if (stdfs::is_regular_file(candidate, ec)) {
                auto rel = stdfs::weakly_canonical(candidate).lexically_relative(m_context.layout.root);
                if (!rel.empty() && *rel.begin() != "..") {
                    return rel.string();
                }
            }
        }
        return std::nullopt;
    }

    // Consumers of `soname`, each with where it resolves now and without `gone`.
    nlohmann::json consumers_of(const std::string& soname, const std::set<std::string>& gone, std::string& text) {
        nlohmann::json consumers = nlohmann::json::array();
        for (const auto& object : m_index.objects()) {
            if (std::find(object.info.needed.begin(), object.info.needed.end(), soname) == object.info.needed.end()) {
                continue;
            }
            Resolution now = m_index.resolve(object, soname);
            Resolution without = m_index.resolve(object, soname, gone);
            consumers.push_back({{"path", object.path}, {"owner", object.owner},
                                 {"resolves_to", resolution_json(now)}, {"without", resolution_json(without)}});
            text += "  needed by " + display_path(m_context.layout, object.path) + " (" + object.owner + "): resolves to " + describe(m_context.layout, now) +
                    "; without it: " + describe(m_context.layout, without) + "\n";
        }
        return consumers;
    }

    WhyAnswer soname(const std::string& name) {
        WhyAnswer answer;
        std::string text = name + "\n";
        std::set<std::string> gone;
        nlohmann::json providers = nlohmann::json::array();
        for (const SharedObject* provider : m_index.providers(name)) {
            gone.insert(provider->path);
            providers.push_back({{"path", provider->path}, {"owner", provider->owner}});
            text += "  provided by " + display_path(m_context.layout, provider->path) + " (" + provider->owner + ")\n";
        }
        if (gone.empty()) {
            text += "  no file in the venv provides it\n";
        }
        answer.json = {{"kind", "soname"}, {"name", name}, {"providers", providers},
                       {"consumers", consumers_of(name, gone, text)}};
        answer.text = text;
        return answer;
    }

    WhyAnswer file(const std::string& path) {
        std::string text = path + "\n";
        nlohmann::json owners = nlohmann::json::array();
        for (const auto& dist : m_inventory) {
            for (const auto& entry : dist.record) {
                stdfs::path full = (dist.site_packages / entry.path).lexically_normal();
                if (full.lexically_relative(m_context.layout.root) == path) {
                    owners.push_back(dist.name);
                    text += "  owned by " + dist.name + "\n";
                    break;
                }
            }
        }
        nlohmann::json json = {{"kind", "file"}, {"path", path}, {"owners", owners}};
        if (const SharedObject* object = m_index.find(path)) {
            nlohmann::json needs = nlohmann::json::array();
            for (const auto& soname : object->info.needed) {
                Resolution now = m_index.resolve(*object, soname);
                needs.push_back({{"soname", soname}, {"resolves_to", resolution_json(now)}});
                text += "  needs " + soname + ": " + describe(m_context.layout, now) + "\n";
            }
            std::string provided = object->info.soname.empty() ? stdfs::path(path).filename().string()
                                                               : object->info.soname;
            json["soname"] = object->info.soname;
            json["needs"] = needs;
            json["consumers"] = consumers_of(provided, {path}, text);
        }
        return {json, text};
    }

    WhyAnswer distribution(const Distribution& dist) {
        std::string text = dist.name + " " + dist.version + " (" + std::to_string(dist.record.size()) + " RECORD entries)\n";
        nlohmann::json provides = nlohmann::json::array();
        for (const auto& object : m_index.objects()) {
            if (object.owner == dist.name) {
                std::string soname = object.info.soname.empty() ? stdfs::path(object.path).filename().string()
                                                                : object.info.soname;
                provides.push_back({{"soname", soname}, {"path", object.path}});
                text += "  provides " + soname + " (" + display_path(m_context.layout, object.path) + ")\n";
            }
        }
        if (provides.empty()) {
            text += "  ships no shared library\n";
        }
        nlohmann::json required_by = nlohmann::json::array();
        for (const auto& other : m_inventory) {
            for (const auto& requirement : other.requires_dist) {
                if (required_name(requirement) == dist.normalized && requirement.find("extra ==") == std::string::npos) {
                    required_by.push_back(other.name);
                    text += "  required by " + other.name + " (Requires-Dist: " + requirement + ")\n";
                    break;
                }
            }
        }
        RemovalPlan plan = plan_removal(m_context.layout, m_inventory, {dist.name}, m_context.store_root);
        RemovalImpact impact = analyze_removal(m_index, plan, m_inventory);
        for (const auto& lost : impact.lost) {
            for (const auto& consumer : lost.consumers) {
                text += "  without it: " + lost.soname + " " +
                        (consumer.after.kind == Resolution::Kind::system
                             ? "falls back to " + consumer.after.path + " (not the same file)"
                             : std::string("would be missing")) +
                        " for " + display_path(m_context.layout, consumer.path) + " (" + consumer.owner + ")\n";
            }
        }
        if (impact.lost.empty()) {
            text += "  without it: no shared library in the venv loses its provider\n";
        }
        nlohmann::json json = {{"kind", "distribution"}, {"name", dist.name}, {"version", dist.version},
                               {"provides", provides}, {"required_by", required_by}};
        json.update(removal_impact_json(impact));
        return {json, text};
    }

    const Context& m_context;
    std::vector<Distribution> m_inventory;
    LibraryIndex m_index;
};

} // namespace

WhyAnswer explain(const Context& context, const std::string& name) { return Explainer(context).answer(name); }

} // namespace venvtx
