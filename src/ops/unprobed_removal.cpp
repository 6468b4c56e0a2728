// unprobed_breakage: the libraries a removal takes from a distribution that stays, and the probe
// that would catch it (`import` of that distribution's top-level package).
#include "venvtx/ops/unprobed_removal.hpp"

#include "venvtx/core/error.hpp"

#include <cctype>
#include <set>

namespace venvtx {

namespace {

bool is_identifier(const std::string& name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) {
        return false;
    }
    for (char c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
            return false;
        }
    }
    return true;
}

// The package a distribution's RECORD puts at the top of site-packages (`torch/__init__.py`),
// preferring the one `consumer` (site-packages-relative) lies in.
std::string top_level_package(const Distribution& dist, const std::string& consumer) {
    std::string preferred = consumer.substr(0, consumer.find('/'));
    std::string first;
    for (const auto& entry : dist.record) {
        auto slash = entry.path.find('/');
        if (slash == std::string::npos || entry.path.substr(slash) != "/__init__.py") {
            continue;
        }
        std::string package = entry.path.substr(0, slash);
        if (package == preferred) {
            return package;
        }
        if (first.empty() && is_identifier(package)) {
            first = package;
        }
    }
    return first;
}

// A venv-relative path from site-packages on (the libraries of a distribution live there).
std::string site_relative(const std::string& venv_relative) {
    auto at = venv_relative.find("site-packages/");
    return at == std::string::npos ? venv_relative : venv_relative.substr(at + 14);
}

} // namespace

std::optional<Breakage> unprobed_breakage(const RemovalImpact& impact, const std::vector<Distribution>& inventory) {
    const LostLibrary* lost = nullptr;
    const LibraryConsumer* consumer = nullptr;
    std::set<std::string> sonames;
    for (const auto& library : impact.lost) {
        for (const auto& needs : library.consumers) {
            sonames.insert(library.soname); // a system copy the loader falls back to is another file
            if (!consumer || (needs.after.kind == Resolution::Kind::missing &&
                              consumer->after.kind != Resolution::Kind::missing)) {
                lost = &library;
                consumer = &needs;
            }
        }
    }
    if (!consumer) {
        return std::nullopt;
    }
    std::string probe;
    for (const auto& dist : inventory) {
        if (dist.name == consumer->owner) {
            std::string package = top_level_package(dist, site_relative(consumer->path));
            probe = package.empty() ? "" : "import " + package;
        }
    }
    std::string more = sonames.size() > 1 ? " (and " + std::to_string(sonames.size() - 1) + " more)" : "";
    std::string providers;
    for (const auto& owner : std::set<std::string>(lost->provider_owners.begin(), lost->provider_owners.end())) {
        providers += (providers.empty() ? "" : ", ") + owner;
    }
    std::string code = probe.empty() ? "import ..." : probe;
    return Breakage{lost->soname + more + " would lose its last venv provider (" + providers + "), and " +
                        consumer->owner + " needs it (" + site_relative(consumer->path) + ")",
                    "Probe the change: --probe '" + code + "' (or save it: venvtx config probe '" + code +
                        "'), or --force removes it unprobed",
                    std::vector<std::string>(sonames.begin(), sonames.end()), consumer->owner, probe};
}

bool unprobed_unasked(const MutationOptions& options) {
    return options.probe.code.empty() && !options.probe_declined && !options.force;
}

void refuse_unprobed_breakage(const MutationOptions& options, const RemovalImpact& impact,
                              const std::vector<Distribution>& inventory) {
    if (!unprobed_unasked(options)) {
        return;
    }
    if (auto breakage = unprobed_breakage(impact, inventory)) {
        throw Error(ExitCode::usage, "unprobed_breakage",
                    "refusing to remove without a probe: " + breakage->what + "; nothing was changed. " +
                        breakage->how,
                    {{"libraries", breakage->libraries}, {"needed_by", breakage->needed_by},
                     {"probe", breakage->probe.empty() ? nlohmann::json() : nlohmann::json(breakage->probe)}});
    }
}

} // namespace venvtx
