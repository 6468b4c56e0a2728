// EntryProgress: names as stored in the index.
#include "venvtx/store/entry_progress.hpp"

#include <array>
#include <utility>

namespace venvtx {

namespace {

constexpr std::array<std::pair<EntryProgress, const char*>, 5> k_names = {{
    {EntryProgress::planned, "planned"},
    {EntryProgress::captured, "captured"},
    {EntryProgress::applied, "applied"},
    {EntryProgress::touched, "touched"},
    {EntryProgress::snapshot, "snapshot"},
}};

} // namespace

const char* to_string(EntryProgress progress) {
    for (const auto& [value, name] : k_names) {
        if (value == progress) {
            return name;
        }
    }
    return "planned";
}

EntryProgress entry_progress_from(const std::string& text) {
    for (const auto& [value, name] : k_names) {
        if (text == name) {
            return value;
        }
    }
    return EntryProgress::planned;
}

} // namespace venvtx
