// estimate_capture: RECORD line counts of the named and of all installed distributions.
#include "venvtx/capture/capture_choice.hpp"

#include "venvtx/venv/names.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

std::size_t line_count(const stdfs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return static_cast<std::size_t>(
        std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
}

} // namespace

std::string spec_name(const std::string& spec) {
    std::string text = spec;
    bool wheel = text.size() > 4 && text.compare(text.size() - 4, 4, ".whl") == 0;
    if (wheel) {
        text = stdfs::path(text).filename().string();
        return normalize_name(text.substr(0, text.find('-')));
    }
    size_t end = text.find_first_of("<>=!~[;@ (");
    std::string name = text.substr(0, end);
    bool plain = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    });
    return plain ? normalize_name(name) : "";
}

CaptureEstimate estimate_capture(const VenvLayout& layout, const std::vector<std::string>& specs) {
    std::set<std::string> named;
    for (const auto& spec : specs) {
        named.insert(spec_name(spec));
    }
    CaptureEstimate estimate;
    for (const auto& site : layout.site_packages) {
        std::error_code error;
        for (const auto& entry : stdfs::directory_iterator(site, error)) {
            std::string dir = entry.path().filename().string();
            if (entry.path().extension() != ".dist-info") {
                continue;
            }
            std::size_t lines = line_count(entry.path() / "RECORD");
            estimate.venv_files += lines;
            // "{name}-{version}.dist-info": the name is the part before the last dash.
            std::string stem = dir.substr(0, dir.size() - std::string(".dist-info").size());
            if (named.count(normalize_name(stem.substr(0, stem.rfind('-')))) != 0) {
                estimate.named_files += lines;
            }
        }
    }
    return estimate;
}

} // namespace venvtx
