// The venv's shared objects (every *.so / *.so.N a RECORD lists), who owns each, what each
// needs, and where the dynamic loader would find it: the object's DT_RPATH (ignored when it has
// DT_RUNPATH), DT_RUNPATH, then ld.so.cache and the default directories ("system").
#pragma once

#include "venvtx/core/fact_cache.hpp"
#include "venvtx/elf/elf_file.hpp"
#include "venvtx/elf/system_libraries.hpp"
#include "venvtx/venv/inventory.hpp"
#include "venvtx/venv/layout.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace venvtx {

struct SharedObject {
    std::string path;   // venv-relative
    std::string owner;  // distribution name
    ElfInfo info;
};

struct Resolution {
    enum class Kind { venv, system, missing } kind = Kind::missing;
    std::string path;  // venv-relative for venv, absolute for system
};

bool is_shared_library_name(const std::string& path);

class LibraryIndex {
public:
    // `facts`: where the dynamic sections read before are kept (nullptr: read every file).
    LibraryIndex(const VenvLayout& layout, const std::vector<Distribution>& dists,
                 const std::filesystem::path& store_root, SystemLibraries system, FactCache* facts = nullptr);

    const std::vector<SharedObject>& objects() const { return m_objects; }
    const SharedObject* find(const std::string& path) const;
    // Files whose name or DT_SONAME is `soname`.
    std::vector<const SharedObject*> providers(const std::string& soname) const;
    // Where the loader finds `soname` for `consumer`, as if the venv paths in `gone` were absent.
    Resolution resolve(const SharedObject& consumer, const std::string& soname,
                       const std::set<std::string>& gone = {}) const;
    // Distributions whose RECORD lists at least one shared library.
    const std::set<std::string>& owners_with_libraries() const { return m_owners_with_libraries; }
    // Shared objects that could not be read ("path: problem").
    const std::vector<std::string>& problems() const { return m_problems; }

private:
    std::vector<std::string> search_dirs(const SharedObject& consumer) const;

    std::filesystem::path m_root;
    SystemLibraries m_system;
    std::vector<SharedObject> m_objects;
    std::map<std::string, std::size_t> m_by_path;
    std::set<std::string> m_owners_with_libraries;
    std::vector<std::string> m_problems;
};

} // namespace venvtx
