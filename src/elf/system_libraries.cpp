// SystemLibraries: parsing `ldconfig -p` and the loader's default directories.
#include "venvtx/elf/system_libraries.hpp"

#include "venvtx/core/subprocess.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace venvtx {

namespace {

const std::vector<std::string> k_default_dirs = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                                                 "/lib64", "/usr/lib64", "/lib", "/usr/lib"};

bool is_file(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string ldconfig_listing() {
    if (const char* file = std::getenv("VENVTX_LD_CACHE")) {
        std::ifstream in(file);
        std::ostringstream text;
        text << in.rdbuf();
        return text.str();
    }
    for (const char* ldconfig : {"/sbin/ldconfig", "/usr/sbin/ldconfig"}) {
        if (is_file(ldconfig)) {
            SubprocessSpec spec;
            spec.argv = {ldconfig, "-p"};
            spec.timeout = std::chrono::milliseconds(10000);
            return run_subprocess(spec).out;
        }
    }
    return {};
}

} // namespace

SystemLibraries SystemLibraries::load() {
    std::vector<std::string> dirs = std::getenv("VENVTX_LD_CACHE") ? std::vector<std::string>{} : k_default_dirs;
    return from_listing(ldconfig_listing(), dirs);
}

SystemLibraries SystemLibraries::from_listing(const std::string& listing, std::vector<std::string> default_dirs) {
    SystemLibraries libraries;
    libraries.m_default_dirs = std::move(default_dirs);
    std::istringstream lines(listing);
    for (std::string line; std::getline(lines, line);) {
        // "\tlibnccl.so.2 (libc6,x86-64) => /usr/local/cuda-13.0/lib/libnccl.so.2"
        size_t arrow = line.find(" => ");
        size_t paren = line.find(" (");
        if (arrow == std::string::npos || paren == std::string::npos || paren > arrow) {
            continue;
        }
        std::string flags = line.substr(paren, arrow - paren);
        if (flags.find("x86-64") == std::string::npos) {
            continue;
        }
        size_t start = line.find_first_not_of(" \t");
        libraries.m_cache.emplace(line.substr(start, paren - start), line.substr(arrow + 4));
    }
    return libraries;
}

bool SystemLibraries::in_default_dir(const std::string& path) const {
    std::string dir = path.substr(0, path.rfind('/'));
    for (const auto& default_dir : k_default_dirs) {
        if (dir == default_dir) {
            return true;
        }
    }
    return false;
}

std::optional<std::string> SystemLibraries::find(const std::string& soname, bool nodeflib) const {
    auto [begin, end] = m_cache.equal_range(soname);
    for (auto it = begin; it != end; ++it) {
        if (!(nodeflib && in_default_dir(it->second))) {
            return it->second;
        }
    }
    if (!nodeflib) {
        for (const auto& dir : m_default_dirs) {
            if (is_file(dir + "/" + soname)) {
                return dir + "/" + soname;
            }
        }
    }
    return std::nullopt;
}

} // namespace venvtx
