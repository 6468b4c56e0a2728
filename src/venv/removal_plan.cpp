// plan_removal: from name patterns to the exact files and directories a removal takes.
#include "venvtx/venv/removal_plan.hpp"

#include "venvtx/core/closest.hpp"
#include "venvtx/core/confinement.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/venv/legacy_installs.hpp"
#include "venvtx/venv/names.hpp"
#include "venvtx/venv/path_resolver.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>
#include <fcntl.h>
#include <optional>
#include <sys/stat.h>
#include <sys/utsname.h>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

// True for "name.<tag>.pyc" and "name.<tag>.opt-N.pyc" (PEP 3147 / PEP 488).
bool is_bytecode_of(const std::string& file, const std::string& stem) {
    if (file.size() <= stem.size() + 5 || file.compare(0, stem.size() + 1, stem + ".") != 0 ||
        file.compare(file.size() - 4, 4, ".pyc") != 0) {
        return false;
    }
    std::string middle = file.substr(stem.size() + 1, file.size() - stem.size() - 5);
    size_t dot = middle.find('.');
    if (dot == std::string::npos) {
        return !middle.empty();
    }
    return dot > 0 && middle.compare(dot + 1, 4, "opt-") == 0 &&
           middle.find('.', dot + 1) == std::string::npos;
}

class Planner {
public:
    Planner(const VenvLayout& layout, const stdfs::path& store_root, bool strict)
        : m_layout(layout), m_resolver(layout, store_root), m_strict(strict) {}

    // A staying distribution's entries are resolved only when a removed path has their file name.
    void note_staying(const Distribution& dist) {
        if (dist.record_error) {
            return;
        }
        for (const auto& entry : dist.record) {
            m_staying.push_back({std::hash<std::string_view>()(last_component(entry.path)), &dist, &entry});
        }
    }

    void add_distribution(const Distribution& dist) {
        require_record(dist);
        for (const auto& entry : dist.record) {
            std::optional<std::string> rel;
            try {
                rel = m_resolver.resolve(dist.site_packages, entry.path, dist.name);
            } catch (const Error&) { // outside the venv: never touched; skipped by name unless --strict
                if (m_strict) {
                    throw;
                }
                m_plan.outside.push_back({entry.path, dist.name});
                continue;
            }
            if (!rel) {
                m_plan.missing.push_back(entry.path); // its directory is gone: no resolved form
                continue;
            }
            add_path(*rel, dist.name, true, &entry);
        }
        add_tree(dist.dist_info, dist.name);
        for (const auto& script : dist.scripts) {
            auto rel = m_resolver.resolve(m_layout.scripts, script, dist.name);
            if (rel && !staying_owner(*rel)) {
                add_path(*rel, dist.name, false);
            }
        }
    }

    RemovalPlan finish() {
        add_bytecode();
        find_empty_dirs();
        for (const auto& planned : m_plan.files) {
            m_plan.bytes += planned.state.type == NodeType::file ? planned.state.size : 0;
        }
        return std::move(m_plan);
    }

    RemovalPlan& plan() { return m_plan; }

private:
    void add_path(const std::string& rel, const std::string& owner, bool listed, const RecordEntry* record = nullptr) {
        if (m_planned.count(rel) != 0) {
            return;
        }
        if (const std::string* staying = staying_owner(rel)) {
            m_plan.shared_kept.push_back({rel, *staying});
            return;
        }
        NodeState state = observe(rel);
        if (state.type == NodeType::absent) {
            if (listed) {
                m_plan.missing.push_back(rel);
            }
            return;
        }
        if (state.type == NodeType::dir) {
            m_dir_candidates.insert(rel);
            return;
        }
        m_planned.insert(rel);
        bool hash_fits = record && record->hash.rfind("sha256=", 0) == 0 && state.type == NodeType::file &&
                         (!record->size || *record->size == state.size); // a size that differs: changed since
        m_plan.files.push_back({rel, state, owner, hash_fits ? record->hash : std::string()});
    }

    // observe_node, with the last directory opened (confined) kept: RECORD lists a directory's
    // files together, so most lookups are one fstatat. Planning only reads; every mutation
    // opens its directory again.
    NodeState observe(const std::string& rel) {
        size_t slash = rel.rfind('/');
        std::string dir = slash == std::string::npos ? std::string() : rel.substr(0, slash);
        if (!m_last_dir || *m_last_dir != dir) {
            m_last_dir = dir;
            try {
                m_last_fd = Confinement::instance().open_dir(m_layout.root / dir);
            } catch (const Error&) {
                m_last_fd = UniqueFd(); // unreachable: each lookup goes the long way, and says why
            }
        }
        struct stat st {};
        if (!m_last_fd.valid() || ::fstatat(m_last_fd.get(), rel.c_str() + (slash == std::string::npos ? 0 : slash + 1),
                                            &st, AT_SYMLINK_NOFOLLOW) != 0) {
            return observe_node(m_layout.root / rel); // absent, or an error observe_node names
        }
        return node_from_stat(m_layout.root / rel, st);
    }

    static std::string_view last_component(std::string_view path) {
        size_t slash = path.rfind('/');
        return slash == std::string_view::npos ? path : path.substr(slash + 1);
    }

    // The first staying distribution (in inventory order) whose RECORD resolves to `rel`.
    const std::string* staying_owner(const std::string& rel) {
        if (!m_staying_sorted) { // by name hash, inventory order kept among equals
            std::stable_sort(m_staying.begin(), m_staying.end(),
                             [](const StayingEntry& a, const StayingEntry& b) { return a.name_hash < b.name_hash; });
            m_staying_sorted = true;
        }
        std::string_view name = last_component(rel);
        StayingEntry probe{std::hash<std::string_view>()(name), nullptr, nullptr};
        auto [first, last] = std::equal_range(m_staying.begin(), m_staying.end(), probe,
                                              [](const StayingEntry& a, const StayingEntry& b) { return a.name_hash < b.name_hash; });
        for (auto it = first; it != last; ++it) {
            if (!it->entry || last_component(it->entry->path) != name) {
                continue;
            }
            try {
                if (auto resolved = m_resolver.resolve(it->dist->site_packages, it->entry->path, it->dist->name)) {
                    m_staying_owner.emplace(*resolved, it->dist->name);
                }
            } catch (const Error&) {
                // A staying distribution's odd path is not ours to judge here.
            }
            it->entry = nullptr; // resolved once
        }
        auto found = m_staying_owner.find(rel);
        return found == m_staying_owner.end() ? nullptr : &found->second;
    }

    // Everything inside a dist-info belongs to its distribution, listed in RECORD or not.
    void add_tree(const stdfs::path& dir, const std::string& owner) {
        std::string rel_dir = dir.lexically_relative(m_layout.root).string();
        m_dir_candidates.insert(rel_dir);
        std::error_code ec;
        for (const auto& entry : stdfs::directory_iterator(dir, ec)) {
            if (entry.is_directory(ec) && !entry.is_symlink(ec)) {
                add_tree(entry.path(), owner);
            } else {
                add_path(entry.path().lexically_relative(m_layout.root).string(), owner, false);
            }
        }
    }

    void add_bytecode() {
        std::vector<PlannedPath> sources;
        for (const auto& planned : m_plan.files) {
            if (stdfs::path(planned.path).extension() == ".py") {
                sources.push_back(planned);
            }
        }
        for (const auto& source : sources) {
            stdfs::path rel(source.path);
            std::string stem = rel.stem().string();
            stdfs::path cache = rel.parent_path() / "__pycache__";
            for (const auto& file : list_dir(cache)) {
                if (is_bytecode_of(file, stem)) {
                    add_path((cache / file).string(), source.owner, false);
                }
            }
            const auto& siblings = list_dir(rel.parent_path());
            for (const char* legacy : {".pyc", ".pyo"}) {
                if (std::binary_search(siblings.begin(), siblings.end(), stem + legacy)) {
                    add_path((rel.parent_path() / (stem + legacy)).string(), source.owner, false);
                }
            }
            m_dir_candidates.insert(cache.string());
        }
    }

    const std::vector<std::string>& list_dir(const stdfs::path& rel) {
        auto found = m_listing_cache.find(rel.string());
        if (found != m_listing_cache.end()) {
            return found->second;
        }
        // Reached without following symlinks, as every other lookup of the plan.
        std::vector<std::string> names = Confinement::instance().names_in(m_layout.root / rel);
        std::sort(names.begin(), names.end());
        return m_listing_cache.emplace(rel.string(), std::move(names)).first->second;
    }

    std::set<std::string> protected_dirs() const {
        std::set<std::string> kept = {"", ".", "include"};
        std::vector<stdfs::path> roots = m_layout.site_packages;
        roots.push_back(m_layout.scripts);
        for (const auto& root : roots) {
            for (stdfs::path rel = root.lexically_relative(m_layout.root); !rel.empty();
                 rel = rel.parent_path()) {
                kept.insert(rel.string());
            }
        }
        return kept;
    }

    // pip's rule (compress_for_rename): a directory that holds a removed file goes whole, empty
    // subdirectories with it, when every file below it goes; nothing above such a directory goes
    // (a `share/` a `.data/` install left is not the distribution's to remove, even empty).
    void find_empty_dirs() {
        std::unordered_map<std::string, std::string> owner_of_dir; // the owner of its first planned file
        for (const auto& planned : m_plan.files) {
            std::size_t slash = planned.path.rfind('/');
            if (slash != std::string::npos && slash > 0) {
                std::string dir = planned.path.substr(0, slash);
                owner_of_dir.try_emplace(dir, planned.owner);
                m_dir_candidates.insert(std::move(dir));
            }
        }
        std::set<std::string> kept = protected_dirs();
        std::vector<std::string> candidates(m_dir_candidates.begin(), m_dir_candidates.end());
        std::stable_sort(candidates.begin(), candidates.end(),
                         [](const std::string& a, const std::string& b) { return a.size() < b.size(); });
        std::vector<std::pair<std::string, std::string>> gone; // (directory, owner)
        std::vector<std::string> wholes;
        for (const auto& dir : candidates) {
            bool inside = std::any_of(wholes.begin(), wholes.end(), [&](const std::string& whole) {
                return dir.size() > whole.size() && dir.compare(0, whole.size() + 1, whole + "/") == 0;
            });
            std::vector<std::string> below;
            std::vector<std::string> links;
            if (inside || kept.count(dir) != 0 || observe(dir).type != NodeType::dir ||
                !goes_whole(dir, kept, below, links)) {
                continue;
            }
            wholes.push_back(dir);
            auto owner = owner_of_dir.find(dir);
            std::string who = owner == owner_of_dir.end() ? std::string() : owner->second;
            for (const auto& link : links) {
                add_path(link, who, false); // the link itself, never what it points to
            }
            gone.emplace_back(dir, who);
            for (const auto& sub : below) {
                auto sub_owner = owner_of_dir.find(sub);
                gone.emplace_back(sub, sub_owner == owner_of_dir.end() ? who : sub_owner->second);
            }
        }
        auto depth = [](const std::string& path) { return std::count(path.begin(), path.end(), '/'); };
        std::stable_sort(gone.begin(), gone.end(),
                         [&](const auto& a, const auto& b) { return depth(a.first) > depth(b.first); });
        for (const auto& [dir, owner] : gone) {
            m_plan.dirs.push_back({dir, observe(dir), owner, {}});
        }
    }

    // Whether nothing but planned files lies below `dir` (a protected directory never goes);
    // `below` gets its subdirectories, `links` its symlinks to directories, which pip's walk
    // counts as directories it does not enter: they go with the tree (the links, not their
    // targets).
    bool goes_whole(const std::string& dir, const std::set<std::string>& kept, std::vector<std::string>& below,
                    std::vector<std::string>& links) {
        for (const auto& name : list_dir(dir)) {
            std::string child = (stdfs::path(dir) / name).string();
            if (m_planned.count(child) != 0) {
                continue;
            }
            NodeType type = observe(child).type;
            std::error_code error;
            if (type == NodeType::symlink && stdfs::is_directory(m_layout.root / child, error)) {
                links.push_back(child);
                continue;
            }
            if (kept.count(child) != 0 || type != NodeType::dir) {
                return false;
            }
            below.push_back(child);
            if (!goes_whole(child, kept, below, links)) {
                return false;
            }
        }
        return true;
    }

    const VenvLayout& m_layout;
    PathResolver m_resolver;
    RemovalPlan m_plan;
    struct StayingEntry {
        std::size_t name_hash;  // of the path's last component
        const Distribution* dist;
        const RecordEntry* entry;  // null once resolved
    };
    std::vector<StayingEntry> m_staying;
    bool m_staying_sorted = false;
    std::unordered_map<std::string, std::string> m_staying_owner;  // resolved so far
    std::set<std::string> m_planned;
    std::set<std::string> m_dir_candidates;
    std::map<std::string, std::vector<std::string>> m_listing_cache;
    std::optional<std::string> m_last_dir;
    UniqueFd m_last_fd;
    bool m_strict;
};

} // namespace

TargetSelection select_targets(const VenvLayout& layout, const std::vector<Distribution>& dists,
                               const std::vector<std::string>& patterns, bool strict) {
    TargetSelection selection;
    std::vector<std::string> names;
    for (const auto& dist : dists) {
        names.push_back(dist.normalized);
    }
    std::vector<std::string> unmatched;
    for (const auto& pattern : patterns) {
        bool matched = false;
        for (const auto& dist : dists) {
            if (name_matches(pattern, dist.name)) {
                selection.targets.insert(&dist);
                matched = true;
            }
        }
        if (!matched) {
            unmatched.push_back(pattern);
            selection.unmatched.push_back({pattern, closest(normalize_name(pattern), names)});
        }
    }
    if (unmatched.empty()) {
        return selection;
    }
    legacy_installs_named(layout, unmatched, false); // remove_distributions sent those to pip before this
    if (strict) {
        std::string quoted;
        for (const auto& pattern : unmatched) {
            quoted += (quoted.empty() ? "'" : ", '") + pattern + "'";
        }
        const auto& near = selection.unmatched.front().near;
        throw Error(ExitCode::usage, "no_match",
                    "no installed distribution matches " + quoted +
                        (near ? " (did you mean '" + *near + "'?)" : "") + "; nothing was changed",
                    {{"patterns", unmatched}});
    }
    return selection;
}

MarkerEnvironment marker_environment(const VenvLayout& layout) {
    struct utsname machine {};
    ::uname(&machine);
    return {layout.python_version, machine.machine};
}

std::vector<BrokenRequirement> requirements_broken_by(const std::vector<Distribution>& dists,
                                                      const std::set<const Distribution*>& removed,
                                                      const MarkerEnvironment& env) {
    std::map<std::string, std::string> removed_names;
    for (const Distribution* dist : removed) {
        removed_names[dist->normalized] = dist->name;
    }
    std::vector<BrokenRequirement> broken;
    for (const auto& dist : dists) {
        if (removed.count(&dist) != 0) {
            continue;
        }
        for (const auto& line : dist.requires_dist) {
            std::optional<Requirement> requirement = parse_requirement(line);
            if (!requirement || !marker_holds(requirement->marker, env)) {
                continue;
            }
            auto found = removed_names.find(requirement->name);
            if (found != removed_names.end()) {
                broken.push_back({dist.name + " " + dist.version, requirement->text, found->second});
            }
        }
    }
    return broken;
}

RemovalPlan plan_removal(const VenvLayout& layout, const std::vector<Distribution>& dists,
                         const std::vector<std::string>& patterns, const stdfs::path& store_root, bool strict) {
    TargetSelection selection = select_targets(layout, dists, patterns, strict);
    const std::set<const Distribution*>& targets = selection.targets;
    Planner planner(layout, store_root, strict);
    for (const auto& dist : dists) {
        if (targets.count(&dist) == 0) {
            planner.note_staying(dist);
        }
    }
    for (const auto& dist : dists) {
        if (targets.count(&dist) != 0) {
            planner.plan().targets.push_back(&dist);
            planner.add_distribution(dist);
        }
    }
    RemovalPlan plan = planner.finish();
    plan.unmatched = selection.unmatched;
    plan.broken_requirements = requirements_broken_by(dists, targets, marker_environment(layout));
    return plan;
}

} // namespace venvtx
