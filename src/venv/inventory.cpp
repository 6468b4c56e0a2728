// scan_inventory: METADATA, RECORD, entry_points.txt and INSTALLER of every dist-info.
#include "venvtx/venv/inventory.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/core/inode_key.hpp"
#include "venvtx/venv/metadata.hpp"
#include "venvtx/venv/names.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

std::optional<std::string> read_text(const stdfs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return std::nullopt;
    }
    std::ostringstream content;
    content << in.rdbuf();
    return content.str();
}

// "{name}-{version}.dist-info", where old installers kept dots and dashes in the name.
void fill_from_directory_name(Distribution& dist) {
    std::string stem = dist.dist_info.filename().string();
    stem.resize(stem.size() - std::string(".dist-info").size());
    size_t dash = stem.rfind('-');
    if (dist.name.empty()) {
        dist.name = dash == std::string::npos ? stem : stem.substr(0, dash);
    }
    if (dist.version.empty() && dash != std::string::npos) {
        dist.version = stem.substr(dash + 1);
    }
}

// METADATA's name, version and requirements; from the cache while the file is unchanged.
std::optional<Metadata> read_metadata(const stdfs::path& path, const stdfs::path& root, FactCache* facts) {
    std::optional<InodeKey> key = facts ? inode_key(path) : std::nullopt;
    std::string rel = path.lexically_relative(root).string();
    if (key) {
        if (auto cached = facts->find(rel, "metadata", *key)) {
            nlohmann::json json = nlohmann::json::parse(*cached);
            return Metadata{json.at("name").get<std::string>(), json.at("version").get<std::string>(),
                            json.at("requires").get<std::vector<std::string>>()};
        }
    }
    auto text = read_text(path);
    if (!text) {
        return std::nullopt;
    }
    Metadata metadata = parse_metadata(*text);
    if (key) {
        nlohmann::json json = {{"name", metadata.name}, {"version", metadata.version}, {"requires", metadata.requires_dist}};
        facts->keep(rel, "metadata", *key, json.dump());
    }
    return metadata;
}

// Name, version and requirements, from METADATA (or the directory's name).
Distribution read_identity(const stdfs::path& site, const stdfs::path& dist_info, const stdfs::path& root,
                           FactCache* facts) {
    Distribution dist;
    dist.dist_info = dist_info;
    dist.site_packages = site;
    if (auto metadata = read_metadata(dist_info / "METADATA", root, facts)) {
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
    if (auto text = read_text(dist_info / "entry_points.txt")) {
        dist.scripts = parse_script_names(*text);
    }
    if (auto text = read_text(dist_info / "INSTALLER")) {
        dist.installer = text->substr(0, text->find_first_of("\r\n"));
    }
    stdfs::path record_path = dist_info / "RECORD";
    auto record_text = read_text(record_path);
    if (!record_text) {
        dist.record_error = dist.name + " has no RECORD (" + record_path.string() +
                            "): venvtx cannot know its files";
        return dist;
    }
    try {
        dist.record = parse_record(*record_text, record_path.string());
    } catch (const Error& error) {
        dist.record_error = error.what();
    }
    return dist;
}

template <typename Visit>
void for_each_dist_info(const VenvLayout& layout, Visit visit) {
    for (const auto& site : layout.site_packages) {
        std::error_code ec;
        for (const auto& entry : stdfs::directory_iterator(site, ec)) {
            const auto& path = entry.path();
            if (path.extension() == ".dist-info" && entry.is_directory(ec) && !entry.is_symlink(ec)) {
                visit(site, path);
            }
        }
    }
}

} // namespace

std::map<std::string, std::string> installed_versions(const VenvLayout& layout, FactCache* facts) {
    std::map<std::string, std::string> versions;
    for_each_dist_info(layout, [&](const stdfs::path& site, const stdfs::path& dist_info) {
        Distribution dist = read_identity(site, dist_info, layout.root, facts);
        versions[dist.name] = dist.version;
    });
    return versions;
}

std::vector<Distribution> scan_inventory(const VenvLayout& layout, FactCache* facts) {
    std::vector<Distribution> dists;
    for_each_dist_info(layout, [&](const stdfs::path& site, const stdfs::path& dist_info) {
        dists.push_back(read_distribution(site, dist_info, layout.root, facts));
    });
    std::sort(dists.begin(), dists.end(), [](const Distribution& a, const Distribution& b) {
        return a.normalized != b.normalized ? a.normalized < b.normalized : a.dist_info < b.dist_info;
    });
    return dists;
}

void require_record(const Distribution& dist) {
    if (dist.record_error) {
        throw usage_error(*dist.record_error);
    }
}

} // namespace venvtx
