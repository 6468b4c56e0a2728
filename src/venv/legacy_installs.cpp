// legacy_installs: the egg-shaped entries of site-packages venvtx does not remove, by name.
#include "venvtx/venv/legacy_installs.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/venv/names.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>

namespace venvtx {

namespace stdfs = std::filesystem;

std::vector<LegacyInstall> legacy_installs(const VenvLayout& layout) {
    std::vector<LegacyInstall> found;
    for (const auto& site : layout.site_packages) {
        std::error_code error;
        for (const auto& entry : stdfs::directory_iterator(site, error)) {
            std::string file = entry.path().filename().string();
            std::string extension = entry.path().extension().string();
            bool info_file = extension == ".egg-info" && !entry.is_directory(error); // distutils: PKG-INFO alone
            if (!info_file && extension != ".egg" && extension != ".egg-link") {
                continue;
            }
            std::string name = file.substr(0, std::min(file.find('-'), file.size() - extension.size()));
            found.push_back({name, entry.path().lexically_relative(layout.root).string(), !info_file});
        }
    }
    return found;
}

std::vector<LegacyInstall> legacy_installs_named(const VenvLayout& layout, const std::vector<std::string>& patterns,
                                                 bool through_pip) {
    std::vector<LegacyInstall> named;
    for (const auto& legacy : legacy_installs(layout)) {
        for (const auto& pattern : patterns) {
            if (!name_matches(pattern, legacy.name)) {
                continue;
            }
            if (!through_pip || !legacy.through_pip) {
                throw Error(ExitCode::usage, "legacy_install",
                            "'" + pattern + "' names " + legacy.name + ", a legacy install (" + legacy.path + ") " +
                                (legacy.through_pip ? "whose removal edits easy-install.pth"
                                                    : "whose files venvtx cannot know") +
                                ": `pip uninstall " + legacy.name +
                                "` removes it (then `venvtx stamp` records the state); nothing was changed",
                            {{"name", legacy.name}, {"path", legacy.path}});
            }
            named.push_back(legacy);
            break;
        }
    }
    return named;
}

} // namespace venvtx
