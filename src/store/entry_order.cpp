// Depth ordering of directory entries.
#include "venvtx/store/entry_order.hpp"

#include <algorithm>

namespace venvtx {

namespace {

long depth(const Entry* entry) { return std::count(entry->path.begin(), entry->path.end(), '/'); }

std::vector<Entry*> dir_entries(std::vector<Entry>& entries) {
    std::vector<Entry*> dirs;
    for (auto& entry : entries) {
        if (entry.before.type == NodeType::dir || entry.after.type == NodeType::dir) {
            dirs.push_back(&entry);
        }
    }
    return dirs;
}

} // namespace

std::vector<Entry*> dirs_deepest_first(std::vector<Entry>& entries) {
    auto dirs = dir_entries(entries);
    std::stable_sort(dirs.begin(), dirs.end(), [](Entry* a, Entry* b) { return depth(a) > depth(b); });
    return dirs;
}

std::vector<Entry*> dirs_shallowest_first(std::vector<Entry>& entries) {
    auto dirs = dir_entries(entries);
    std::stable_sort(dirs.begin(), dirs.end(), [](Entry* a, Entry* b) { return depth(a) < depth(b); });
    return dirs;
}

} // namespace venvtx
