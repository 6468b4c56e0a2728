// Discovery of a venv and its directories (pyvenv.cfg, lib*/python*/site-packages, bin).
#include "venvtx/venv/layout.hpp"

#include "venvtx/core/error.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

std::string read_python_version(const stdfs::path& cfg) {
    std::ifstream in(cfg);
    std::string line;
    std::string version;
    while (std::getline(in, line)) {
        size_t equals = line.find('=');
        if (equals == std::string::npos) {
            continue;
        }
        std::string key = line.substr(0, equals);
        key.erase(key.find_last_not_of(" \t") + 1);
        std::string value = line.substr(equals + 1);
        value.erase(0, value.find_first_not_of(" \t"));
        value.erase(value.find_last_not_of(" \t\r") + 1);
        if (key == "version" || (key == "version_info" && version.empty())) {
            version = value;
        }
    }
    return version;
}

std::vector<stdfs::path> find_site_packages(const stdfs::path& root) {
    std::vector<stdfs::path> found;
    std::error_code ec;
    for (const char* lib : {"lib", "lib64"}) {
        for (const auto& entry : stdfs::directory_iterator(root / lib, ec)) {
            stdfs::path candidate = entry.path() / "site-packages";
            if (stdfs::is_directory(candidate, ec)) {
                stdfs::path canonical = stdfs::canonical(candidate, ec);
                if (!ec && std::find(found.begin(), found.end(), canonical) == found.end()) {
                    found.push_back(canonical);
                }
            }
        }
    }
    std::sort(found.begin(), found.end());
    return found;
}

} // namespace

VenvLayout read_layout(const stdfs::path& dir, const std::optional<stdfs::path>& store) {
    std::error_code ec;
    // A venv whose pyvenv.cfg a change took away is still the venv its history belongs to: log,
    // recover and rollback (which puts the file back) must not be locked out of it.
    stdfs::path index = (store ? *store : dir / ".venvtx") / "index.sqlite";
    if (!stdfs::exists(dir / "pyvenv.cfg", ec) && !stdfs::exists(index, ec)) {
        throw Error(ExitCode::usage, "not_a_venv", dir.string() + " is not a venv (no pyvenv.cfg)", nlohmann::json::object());
    }
    VenvLayout layout;
    layout.root = stdfs::canonical(dir, ec);
    if (ec) {
        throw usage_error("cannot resolve venv " + dir.string() + ": " + ec.message());
    }
    layout.scripts = layout.root / "bin";
    layout.python = layout.scripts / "python";
    if (!stdfs::exists(layout.python, ec)) {
        layout.python = layout.scripts / "python3";
    }
    layout.python_version = read_python_version(layout.root / "pyvenv.cfg");
    layout.site_packages = find_site_packages(layout.root);
    for (const auto& site : layout.site_packages) {
        auto rel = site.lexically_relative(layout.root);
        if (rel.empty() || *rel.begin() == "..") {
            throw usage_error("site-packages " + site.string() + " lies outside the venv " +
                              layout.root.string());
        }
    }
    if (layout.site_packages.empty()) {
        throw usage_error(dir.string() + " has no lib/python*/site-packages");
    }
    return layout;
}

std::string display_path(const VenvLayout& layout, const std::string& rel) {
    for (const auto& site : layout.site_packages) {
        std::string prefix = site.lexically_relative(layout.root).string() + "/";
        if (rel.compare(0, prefix.size(), prefix) == 0) {
            return rel.substr(prefix.size());
        }
    }
    return rel;
}

namespace {

// The nearest .venv holding a pyvenv.cfg, from the working directory up; empty when none.
stdfs::path nearest_dot_venv() {
    std::error_code ec;
    for (stdfs::path dir = stdfs::current_path(ec); !ec && !dir.empty(); dir = dir.parent_path()) {
        if (stdfs::exists(dir / ".venv" / "pyvenv.cfg", ec)) {
            return dir / ".venv";
        }
        if (dir == dir.root_path()) {
            break;
        }
    }
    return {};
}

} // namespace

VenvLayout find_venv(const std::optional<stdfs::path>& explicit_dir, const std::optional<stdfs::path>& store) {
    if (explicit_dir) {
        std::error_code ec;
        if (!stdfs::is_directory(*explicit_dir, ec)) {
            throw Error(ExitCode::usage, "not_a_venv", "no venv at " + explicit_dir->string() + ": not a directory", nlohmann::json::object());
        }
        VenvLayout layout = read_layout(*explicit_dir, store);
        layout.found_by = "--venv";
        return layout;
    }
    stdfs::path dot_venv = nearest_dot_venv();
    if (const char* active = std::getenv("VIRTUAL_ENV"); active && *active) {
        VenvLayout layout;
        try {
            layout = read_layout(active, store);
        } catch (const Error& error) {
            throw Error(error.code(), error.kind(),
                        "from $VIRTUAL_ENV: " + std::string(error.what()) + "; deactivate, or pass --venv DIR",
                        error.details());
        }
        layout.found_by = "$VIRTUAL_ENV";
        std::error_code ec;
        if (!dot_venv.empty() && !stdfs::equivalent(dot_venv, layout.root, ec)) {
            layout.other_venv = stdfs::weakly_canonical(dot_venv, ec);
        }
        return layout;
    }
    if (!dot_venv.empty()) {
        VenvLayout layout = read_layout(dot_venv, store);
        layout.found_by = ".venv";
        return layout;
    }
    throw Error(ExitCode::usage, "not_a_venv", "no venv found: pass --venv DIR, activate one ($VIRTUAL_ENV), or create ./.venv", nlohmann::json::object());
}

std::map<std::string, std::optional<std::string>> activated_environment(const VenvLayout& layout) {
    const char* path = std::getenv("PATH");
    return {{"VIRTUAL_ENV", layout.root.string()},
            {"PATH", layout.scripts.string() + (path ? std::string(":") + path : "")},
            {"PYTHONHOME", std::nullopt}};
}

} // namespace venvtx
