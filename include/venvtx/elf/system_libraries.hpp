// Where the dynamic loader looks after an object's own RPATH/RUNPATH: ld.so.cache, then the
// default directories. Read once per run from `ldconfig -p` (or from the file named by
// VENVTX_LD_CACHE, in the same format, so tests do not depend on this machine's cache).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace venvtx {

class SystemLibraries {
public:
    // Loads the cache listing (x86-64 entries) and the default directories.
    static SystemLibraries load();
    // Builds from `ldconfig -p` text, for tests.
    static SystemLibraries from_listing(const std::string& listing, std::vector<std::string> default_dirs);

    // The system file the loader would map for `soname`. With `nodeflib` (DF_1_NODEFLIB on the
    // consumer), cache entries in default directories and the default directories are skipped.
    std::optional<std::string> find(const std::string& soname, bool nodeflib) const;

private:
    bool in_default_dir(const std::string& path) const;

    std::multimap<std::string, std::string> m_cache;  // soname -> path, in cache order
    std::vector<std::string> m_default_dirs;
};

} // namespace venvtx
