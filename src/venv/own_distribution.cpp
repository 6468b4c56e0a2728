// own_distribution: which distribution of the venv the running venvtx binary belongs to.
#include "venvtx/venv/own_distribution.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/venv/inventory.hpp"
#include "venvtx/venv/path_resolver.hpp"

#include <nlohmann/json.hpp>
#include <system_error>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

// The running executable's venv-relative path, or "" when it lives outside the venv.
std::string running_binary_in(const VenvLayout& layout) {
    std::error_code error;
    stdfs::path exe = stdfs::read_symlink("/proc/self/exe", error); // resolved by the kernel
    stdfs::path root = stdfs::weakly_canonical(layout.root, error);
    if (exe.empty() || root.empty()) {
        return "";
    }
    std::string inside = exe.lexically_relative(root).generic_string();
    return inside.empty() || inside == "." || inside.rfind("..", 0) == 0 ? "" : inside;
}

} // namespace

std::optional<OwnDistribution> own_distribution(const VenvLayout& layout, const stdfs::path& store_root) {
    std::string binary = running_binary_in(layout);
    if (binary.empty()) {
        return std::nullopt;
    }
    PathResolver resolver(layout, store_root);
    for (const auto& dist : scan_inventory(layout)) {
        OwnDistribution own{dist.name, dist.version, binary, {}};
        for (const auto& entry : dist.record) {
            try {
                if (auto path = resolver.resolve(dist.site_packages, entry.path, dist.name)) {
                    own.paths.insert(*path);
                }
            } catch (const Error&) { // an escaping path is not venvtx's binary: the plan refuses it
            }
        }
        if (own.paths.count(binary) > 0) {
            own.paths.insert(dist.dist_info.lexically_relative(layout.root).generic_string());
            return own;
        }
    }
    return std::nullopt;
}

void refuse_changing_own_distribution(const OwnDistribution& own, const std::vector<std::string>& paths,
                                      const std::string& what) {
    for (const auto& path : paths) {
        if (own.paths.count(path) > 0) {
            throw Error(ExitCode::usage, "own_distribution",
                        "refusing " + what + ": it changes " + path + ", a file of " + own.name + " " +
                            own.version + ", the venvtx running now (" + own.binary +
                            "); --force makes it anyway; nothing was changed",
                        {{"distribution", own.name}, {"path", path}, {"binary", own.binary}});
        }
    }
}

} // namespace venvtx
