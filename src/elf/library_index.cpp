// LibraryIndex: reading the venv's shared objects and replaying the loader's search.
#include "venvtx/elf/library_index.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/core/node_state.hpp"
#include "venvtx/venv/path_resolver.hpp"

#include <nlohmann/json.hpp>
#include <sys/stat.h>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

bool exists_as_file(const stdfs::path& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// $ORIGIN and ${ORIGIN} become the consumer's directory; $LIB and $PLATFORM their x86-64 values.
std::string expand(std::string dir, const std::string& origin) {
    const std::pair<const char*, std::string> tokens[] = {
        {"${ORIGIN}", origin}, {"$ORIGIN", origin}, {"${LIB}", "lib/x86_64-linux-gnu"},
        {"$LIB", "lib/x86_64-linux-gnu"}, {"${PLATFORM}", "x86_64"}, {"$PLATFORM", "x86_64"}};
    for (const auto& [token, value] : tokens) {
        for (size_t at = dir.find(token); at != std::string::npos; at = dir.find(token, at + value.size())) {
            dir.replace(at, std::string(token).size(), value);
        }
    }
    return dir;
}

nlohmann::json to_json(const ElfResult& elf) {
    const ElfInfo& info = elf.info;
    return {{"status", static_cast<int>(elf.status)}, {"problem", elf.problem}, {"soname", info.soname},
            {"needed", info.needed}, {"rpath", info.rpath}, {"runpath", info.runpath},
            {"nodeflib", info.nodeflib}, {"is_64", info.is_64}, {"machine", info.machine}};
}

ElfResult from_json(const std::string& text) {
    nlohmann::json json = nlohmann::json::parse(text);
    ElfResult elf;
    elf.status = static_cast<ElfStatus>(json.at("status").get<int>());
    elf.problem = json.at("problem").get<std::string>();
    elf.info.soname = json.at("soname").get<std::string>();
    elf.info.needed = json.at("needed").get<std::vector<std::string>>();
    elf.info.rpath = json.at("rpath").get<std::vector<std::string>>();
    elf.info.runpath = json.at("runpath").get<std::vector<std::string>>();
    elf.info.nodeflib = json.at("nodeflib").get<bool>();
    elf.info.is_64 = json.at("is_64").get<bool>();
    elf.info.machine = json.at("machine").get<std::uint16_t>();
    return elf;
}

// The file's dynamic section, from the cache while its inode is unchanged.
ElfResult read_elf_facts(const stdfs::path& path, const std::string& rel, const InodeKey& key, FactCache* facts) {
    if (facts) {
        if (auto cached = facts->find(rel, "elf", key)) {
            try {
                return from_json(*cached);
            } catch (const nlohmann::json::exception&) {
                // Another version's row, or a damaged one: read the file.
            }
        }
    }
    ElfResult elf = read_elf_file(path);
    if (facts) {
        try {
            facts->keep(rel, "elf", key, to_json(elf).dump());
        } catch (const nlohmann::json::exception&) {
            // Names that are not UTF-8 (a damaged object): not kept, read again next time.
        }
    }
    return elf;
}

} // namespace

bool is_shared_library_name(const std::string& path) {
    size_t slash = path.rfind('/');
    std::string_view name = slash == std::string::npos ? std::string_view(path) : std::string_view(path).substr(slash + 1);
    size_t at = name.find(".so");
    if (at == std::string::npos || at == 0) {
        return false;
    }
    std::string_view rest = name.substr(at + 3);
    return rest.empty() || (rest[0] == '.' && rest.find_first_not_of("0123456789.", 1) == std::string::npos);
}

LibraryIndex::LibraryIndex(const VenvLayout& layout, const std::vector<Distribution>& dists,
                           const stdfs::path& store_root, SystemLibraries system, FactCache* facts)
    : m_root(layout.root), m_system(std::move(system)) {
    PathResolver resolver(layout, store_root);
    for (const auto& dist : dists) {
        if (dist.record_error) {
            continue;
        }
        for (const auto& entry : dist.record) {
            if (!is_shared_library_name(entry.path)) {
                continue;
            }
            m_owners_with_libraries.insert(dist.name);
            std::optional<std::string> rel;
            try {
                rel = resolver.resolve(dist.site_packages, entry.path, dist.name);
            } catch (const Error&) {
                continue; // outside the venv: not ours to analyse
            }
            if (!rel || m_by_path.count(*rel) != 0) {
                continue;
            }
            std::optional<InodeKey> key = inode_key(m_root / *rel);
            if (!key) {
                continue; // not a regular file reached without symlinks
            }
            ElfResult elf = read_elf_facts(m_root / *rel, *rel, *key, facts);
            if (elf.status == ElfStatus::malformed) {
                m_problems.push_back(*rel + ": " + elf.problem);
            }
            if (elf.status != ElfStatus::ok) {
                continue;
            }
            m_by_path.emplace(*rel, m_objects.size());
            m_objects.push_back({*rel, dist.name, std::move(elf.info)});
        }
    }
}

const SharedObject* LibraryIndex::find(const std::string& path) const {
    auto found = m_by_path.find(path);
    return found == m_by_path.end() ? nullptr : &m_objects[found->second];
}

std::vector<const SharedObject*> LibraryIndex::providers(const std::string& soname) const {
    std::vector<const SharedObject*> found;
    for (const auto& object : m_objects) {
        if (object.info.soname == soname || stdfs::path(object.path).filename() == soname) {
            found.push_back(&object);
        }
    }
    return found;
}

std::vector<std::string> LibraryIndex::search_dirs(const SharedObject& consumer) const {
    std::string origin = (m_root / consumer.path).parent_path().string();
    std::vector<std::string> dirs;
    const auto& own = consumer.info.runpath.empty() ? consumer.info.rpath : consumer.info.runpath;
    for (const auto& dir : own) {
        if (!dir.empty()) {
            dirs.push_back(stdfs::path(expand(dir, origin)).lexically_normal().string());
        }
    }
    return dirs;
}

Resolution LibraryIndex::resolve(const SharedObject& consumer, const std::string& soname,
                                 const std::set<std::string>& gone) const {
    if (soname.find('/') != std::string::npos) {
        return {exists_as_file(soname) ? Resolution::Kind::system : Resolution::Kind::missing, soname};
    }
    for (const auto& dir : search_dirs(consumer)) {
        stdfs::path candidate = stdfs::path(dir) / soname;
        auto rel = candidate.lexically_relative(m_root);
        bool inside = !rel.empty() && *rel.begin() != "..";
        if (inside) {
            if (gone.count(rel.string()) == 0 && exists_as_file(candidate)) {
                return {Resolution::Kind::venv, rel.string()};
            }
        } else if (exists_as_file(candidate)) {
            return {Resolution::Kind::system, candidate.string()};
        }
    }
    if (auto system = m_system.find(soname, consumer.info.nodeflib)) {
        return {Resolution::Kind::system, *system};
    }
    return {Resolution::Kind::missing, {}};
}

} // namespace venvtx
