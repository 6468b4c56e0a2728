// scan_inventory: METADATA, RECORD, entry_points.txt and INSTALLER of every dist-info.
#include "venvtx/venv/inventory.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/core/file_text.hpp"
#include "venvtx/core/inode_key.hpp"
#include "venvtx/core/unique_fd.hpp"
#include "venvtx/venv/metadata.hpp"
#include "venvtx/venv/names.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

bool is_egg_info(const stdfs::path& info) { return info.extension() == ".egg-info"; }

// "{name}-{version}.dist-info", where old installers kept dots and dashes in the name;
// "{name}-{version}[-pyX.Y[-platform]].egg-info", where setuptools made every '-' in the name '_'.
void fill_from_directory_name(Distribution& dist) {
    std::string stem = dist.dist_info.stem().string();
    bool egg = is_egg_info(dist.dist_info);
    size_t dash = egg ? stem.find('-') : stem.rfind('-');
    if (dist.name.empty()) {
        dist.name = stem.substr(0, dash);
    }
    if (dist.version.empty() && dash != std::string::npos) {
        size_t end = egg ? stem.find('-', dash + 1) : std::string::npos;
        dist.version = stem.substr(dash + 1, end == std::string::npos ? end : end - dash - 1);
    }
}

// METADATA, or an egg-info's PKG-INFO (distutils wrote the egg-info as that file alone).
stdfs::path metadata_path(const stdfs::path& info) {
    if (!is_egg_info(info)) {
        return info / "METADATA";
    }
    std::error_code error;
    return stdfs::is_directory(stdfs::symlink_status(info, error)) ? info / "PKG-INFO" : info;
}

// METADATA's name, version and requirements; from the cache while the file is unchanged.
std::optional<Metadata> read_metadata(const stdfs::path& path, const stdfs::path& root, FactCache* facts) {
    std::optional<InodeKey> key = facts ? inode_key(path) : std::nullopt;
    std::string rel = path.lexically_relative(root).string();
    if (key) {
        if (auto cached = facts->find(rel, "metadata", *key)) {
            try {
                nlohmann::json json = nlohmann::json::parse(*cached);
                return Metadata{json.at("name").get<std::string>(), json.at("version").get<std::string>(),
                                json.at("requires").get<std::vector<std::string>>()};
            } catch (const nlohmann::json::exception&) {
                // Another version's row, or a damaged one: read the file.
            }
        }
    }
    auto text = read_file_text(path);
    if (!text) {
        return std::nullopt;
    }
    Metadata metadata = parse_metadata(*text);
    if (key) {
        nlohmann::json json = {{"name", metadata.name}, {"version", metadata.version}, {"requires", metadata.requires_dist}};
        try {
            facts->keep(rel, "metadata", *key, json.dump());
        } catch (const nlohmann::json::exception&) {
            // Not UTF-8: not kept, read again next time.
        }
    }
    return metadata;
}

// Name, version and requirements, from METADATA (or the directory's name).
Distribution read_identity(const stdfs::path& site, const stdfs::path& dist_info, const stdfs::path& root,
                           FactCache* facts) {
    Distribution dist;
    dist.dist_info = dist_info;
    dist.site_packages = site;
    if (auto metadata = read_metadata(metadata_path(dist_info), root, facts)) {
        dist.name = metadata->name;
        dist.version = metadata->version;
        dist.requires_dist = metadata->requires_dist;
    }
    fill_from_directory_name(dist);
    dist.normalized = normalize_name(dist.name);
    return dist;
}

Distribution read_distribution(const stdfs::path& site, const stdfs::path& dist_info, const stdfs::path& root,
                               FactCache* facts) {
    Distribution dist = read_identity(site, dist_info, root, facts);
    if (auto text = read_file_text(dist_info / "entry_points.txt")) {
        dist.scripts = parse_script_names(*text);
    }
    if (auto text = read_file_text(dist_info / "INSTALLER")) {
        dist.installer = text->substr(0, text->find_first_of("\r\n"));
    }
    return dist;
}

// The lines of a setuptools metadata list, trimmed, empty ones dropped.
std::vector<std::string> text_lines(const std::string& text) {
    std::vector<std::string> lines;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = std::min(text.find('\n', start), text.size());
        size_t first = text.find_first_not_of(" \t\r", start);
        size_t last = text.find_last_not_of(" \t\r", end == 0 ? 0 : end - 1);
        if (first < end && last != std::string::npos && last >= first) {
            lines.push_back(text.substr(first, last - first + 1));
        }
        start = end + 1;
    }
    return lines;
}

// A legacy egg-info's files, as pip's setuptools_flat_installation finds them: installed-files.txt
// (paths relative to the egg-info), else top_level.txt's names less namespace_packages.txt, each
// a package directory (whole) or a module (.py, .pyc, .pyo). Written as RECORD paths would be.
void read_egg_info_files(Distribution& dist) {
    stdfs::path info_name = dist.dist_info.filename();
    if (auto listed = read_file_text(dist.dist_info / "installed-files.txt")) {
        for (const auto& line : text_lines(*listed)) {
            stdfs::path path(line);
            dist.record.push_back({(path.is_absolute() ? path : (info_name / path).lexically_normal()).string(), "", {}});
        }
        return;
    }
    auto top_level = read_file_text(dist.dist_info / "top_level.txt");
    if (!top_level) {
        dist.record_error = dist.name + " " + dist.version + "'s egg-info (" + dist.dist_info.string() +
                            ") has neither installed-files.txt nor top_level.txt: venvtx cannot know its files";
        return;
    }
    std::vector<std::string> namespaces = text_lines(read_file_text(dist.dist_info / "namespace_packages.txt").value_or(""));
    std::error_code error;
    for (const auto& name : text_lines(*top_level)) {
        if (std::find(namespaces.begin(), namespaces.end(), name) != namespaces.end() ||
            name.find('/') != std::string::npos || name == "." || name == "..") {
            continue;
        }
        stdfs::path package = dist.site_packages / name;
        if (stdfs::is_directory(stdfs::symlink_status(package, error))) {
            for (auto it = stdfs::recursive_directory_iterator(package, error); it != stdfs::recursive_directory_iterator();
                 it.increment(error)) {
                if (!it->is_directory(error) || it->is_symlink(error)) {
                    dist.record.push_back({it->path().lexically_relative(dist.site_packages).string(), "", {}});
                }
            }
            continue;
        }
        for (const char* suffix : {"", ".py", ".pyc", ".pyo"}) {
            if (stdfs::exists(stdfs::symlink_status(dist.site_packages / (name + suffix), error))) {
                dist.record.push_back({name + suffix, "", {}});
            }
        }
    }
}

void read_record(Distribution& dist) {
    if (is_egg_info(dist.dist_info)) {
        read_egg_info_files(dist);
        return;
    }
    stdfs::path record_path = dist.dist_info / "RECORD";
    int error = 0;
    auto record_text = read_file_text(record_path, error);
    if (!record_text) {
        dist.record_error = error == ENOENT ? dist.name + " has no RECORD (" + record_path.string() +
                                                  "): venvtx cannot know its files"
                                            : "cannot read " + dist.name + "'s RECORD (" + record_path.string() +
                                                  "): " + std::strerror(error);
        return;
    }
    try {
        dist.record = parse_record(*record_text, record_path.string());
    } catch (const Error& error) {
        dist.record_error = error.what();
    }
}

// The RECORDs, read and parsed on every core (a torch venv lists 50,000 files).
void read_records(std::vector<Distribution>& dists) {
    std::atomic<size_t> next{0};
    std::exception_ptr failure;
    std::mutex failure_mutex;
    auto work = [&] {
        for (size_t i = next++; i < dists.size(); i = next++) {
            try {
                read_record(dists[i]);
            } catch (...) { // raised here, after the join
                std::lock_guard<std::mutex> guard(failure_mutex);
                failure = std::current_exception();
            }
        }
    };
    std::vector<std::thread> threads;
    size_t workers = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 4);
    try {
        for (size_t i = 1; i < std::min(workers, dists.size()); ++i) {
            threads.emplace_back(work);
        }
    } catch (const std::system_error&) {
        // Fewer threads: this one does the rest.
    }
    work();
    for (auto& thread : threads) {
        thread.join();
    }
    if (failure) {
        std::rethrow_exception(failure);
    }
}

} // namespace

std::vector<DistInfoDir> list_dist_infos(const VenvLayout& layout) {
    std::vector<DistInfoDir> found;
    for (const auto& site : layout.site_packages) {
        std::error_code ec;
        for (const auto& entry : stdfs::directory_iterator(site, ec)) {
            const auto& path = entry.path();
            if (path.extension() == ".dist-info" && entry.is_directory(ec) && !entry.is_symlink(ec)) {
                found.push_back({site, path});
            }
        }
    }
    return found;
}

std::vector<DistInfoDir> list_installed_infos(const VenvLayout& layout) {
    std::vector<DistInfoDir> found;
    for (const auto& site : layout.site_packages) {
        std::error_code ec;
        for (const auto& entry : stdfs::directory_iterator(site, ec)) {
            const auto& path = entry.path();
            bool dist_info = path.extension() == ".dist-info" && entry.is_directory(ec);
            if ((dist_info || is_egg_info(path)) && !entry.is_symlink(ec)) {
                found.push_back({site, path});
            }
        }
    }
    return found;
}

Distribution read_installed(const DistInfoDir& dir, const stdfs::path& root, FactCache* facts) {
    return read_distribution(dir.site_packages, dir.dist_info, root, facts);
}

std::map<std::string, std::string> installed_versions(const VenvLayout& layout, FactCache* facts) {
    std::map<std::string, std::string> versions;
    std::set<std::string> named;
    for (const auto& dir : list_installed_infos(layout)) {
        Distribution dist = read_identity(dir.site_packages, dir.dist_info, layout.root, facts);
        if (named.insert(dist.normalized).second) {
            versions[dist.name] = dist.version;
        }
    }
    return versions;
}

std::vector<Distribution> scan_inventory(const VenvLayout& layout, FactCache* facts) {
    std::vector<Distribution> dists;
    for (const auto& dir : list_dist_infos(layout)) {
        dists.push_back(read_distribution(dir.site_packages, dir.dist_info, layout.root, facts));
    }
    std::set<std::string> named;
    for (const auto& dist : dists) {
        named.insert(dist.normalized);
    }
    std::error_code error;
    for (const auto& dir : list_installed_infos(layout)) { // a flat egg-info, where no dist-info has its name
        if (is_egg_info(dir.dist_info) && stdfs::is_directory(stdfs::symlink_status(dir.dist_info, error))) {
            Distribution dist = read_distribution(dir.site_packages, dir.dist_info, layout.root, facts);
            if (named.insert(dist.normalized).second) {
                dists.push_back(std::move(dist));
            }
        }
    }
    read_records(dists);
    std::sort(dists.begin(), dists.end(), [](const Distribution& a, const Distribution& b) {
        return a.normalized != b.normalized ? a.normalized < b.normalized : a.dist_info < b.dist_info;
    });
    return dists;
}

void require_record(const Distribution& dist) {
    if (dist.record_error) {
        throw usage_error(*dist.record_error);
    }
    if (dist.record.empty()) { // pip: "No files were found to uninstall", and it stays
        throw usage_error(dist.name + " " + dist.version + "'s RECORD lists no file: venvtx cannot know what it "
                          "installed; nothing was changed");
    }
}

} // namespace venvtx
