// What a removal does to the venv's shared libraries, known before anything moves: every soname
// that would lose its last venv provider (and who needs it, and whether the loader would then
// find nothing or fall back to a system copy), and distributions that ship no shared library.
#pragma once

#include "venvtx/elf/library_index.hpp"
#include "venvtx/venv/removal_plan.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace venvtx {

struct LibraryConsumer {
    std::string path;
    std::string owner;
    Resolution after;  // missing, or a system fallback (never the same file)
};

struct LostLibrary {
    std::string soname;
    std::vector<std::string> providers;        // removed venv files that provided it
    std::vector<std::string> provider_owners;  // their distributions
    std::vector<LibraryConsumer> consumers;
};

struct NoLibraryNote {
    std::string name;
    std::string note;  // e.g. "stays, but ships no shared library: it will not replace nvidia-cudnn-cu13"
};

// A distribution that stays but whose shared libraries were not read (its RECORD cannot be):
// what it needs or provides is not in `lost`.
struct UnanalysedDistribution {
    std::string name;
    std::string reason;
};

struct RemovalImpact {
    std::vector<LostLibrary> lost;
    std::vector<NoLibraryNote> no_shared_library;
    std::vector<UnanalysedDistribution> unanalysed;
    std::vector<std::string> footprint;  // removed files a passing probe had mapped
};

RemovalImpact analyze_removal(const LibraryIndex& index, const RemovalPlan& plan,
                              const std::vector<Distribution>& dists);

nlohmann::json removal_impact_json(const RemovalImpact& impact);

} // namespace venvtx
