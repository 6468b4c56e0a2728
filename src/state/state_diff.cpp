// diff_states: distributions first; RECORD texts are parsed only for what was asked.
#include "venvtx/state/state_diff.hpp"

#include "venvtx/state/state_index.hpp"
#include "venvtx/venv/record.hpp"

#include <unordered_map>

namespace venvtx {

namespace {

// A shared library by file name: lib*.so, *.so.N..., but not a Python extension module (its
// name carries an ABI tag: .cpython-, .abi3., .pypy).
bool is_library_name(const std::string& name) {
    if (name.find(".cpython-") != std::string::npos || name.find(".abi3.") != std::string::npos ||
        name.find(".pypy") != std::string::npos) {
        return false;
    }
    std::size_t so = name.rfind(".so");
    if (so == std::string::npos || so == 0) {
        return false;
    }
    // ".so" at the end, or followed only by ".N" version parts.
    for (std::size_t i = so + 3; i < name.size(); ++i) {
        if (!(std::isdigit(static_cast<unsigned char>(name[i])) || (name[i] == '.' && i + 1 < name.size()))) {
            return false;
        }
    }
    return true;
}

// RECORD entries of a dist by its record digest (parsed once per diff).
class Records {
public:
    explicit Records(Database& db) : m_db(db) {}
    const std::vector<RecordEntry>& of(const DistState& dist) {
        auto found = m_parsed.find(dist.record);
        if (found != m_parsed.end()) {
            return found->second;
        }
        std::vector<RecordEntry> entries;
        if (auto text = dist.record.empty() ? std::nullopt : load_record_text(m_db, dist.record)) {
            try {
                entries = parse_record(*text, dist.dist_info + "/RECORD");
            } catch (const std::exception&) { // a torn RECORD lists nothing
            }
        }
        return m_parsed.emplace(dist.record, std::move(entries)).first->second;
    }

private:
    Database& m_db;
    std::unordered_map<std::string, std::vector<RecordEntry>> m_parsed;
};

std::int64_t listed_bytes(const std::vector<RecordEntry>& entries) {
    std::int64_t total = 0;
    for (const auto& entry : entries) {
        total += static_cast<std::int64_t>(entry.size.value_or(0));
    }
    return total;
}

void add_file_flags(std::vector<FileFlag>& flags, const DistChange& change, Records& records) {
    std::map<std::string, const RecordEntry*> before;
    std::map<std::string, const RecordEntry*> after;
    if (change.before) {
        for (const auto& entry : records.of(*change.before)) {
            before[entry.path] = &entry;
        }
    }
    if (change.after) {
        for (const auto& entry : records.of(*change.after)) {
            after[entry.path] = &entry;
        }
    }
    for (const auto& [path, entry] : before) {
        auto found = after.find(path);
        if (found == after.end()) {
            flags.push_back({'-', path, change.name});
        } else if (found->second->hash != entry->hash || found->second->size != entry->size) {
            flags.push_back({'M', path, change.name});
        }
    }
    for (const auto& [path, entry] : after) {
        if (before.count(path) == 0) {
            flags.push_back({'+', path, change.name});
        }
    }
}

std::map<std::string, std::string> libraries_of(const VenvState& state, Records& records) {
    std::map<std::string, std::string> libs;
    for (const auto& dist : state.dists) {
        for (const auto& entry : records.of(dist)) {
            std::string name = entry.path.substr(entry.path.rfind('/') + 1);
            if (is_library_name(name)) {
                libs.emplace(name, dist.name + " " + dist.version);
            }
        }
    }
    return libs;
}

} // namespace

StateDiff diff_states(Database& db, const VenvState& from, const VenvState& to, bool with_files, bool with_libs) {
    StateDiff diff;
    Records records(db);
    for (const auto& change : state_changes(from, to)) {
        DistDiff item;
        item.name = change.name;
        if (change.before) {
            item.before = change.before->version;
            item.size_delta -= listed_bytes(records.of(*change.before));
        }
        if (change.after) {
            item.after = change.after->version;
            item.size_delta += listed_bytes(records.of(*change.after));
        }
        diff.dists.push_back(std::move(item));
        if (with_files) {
            add_file_flags(diff.files, change, records);
        }
    }
    if (with_libs) {
        diff.libs_before = libraries_of(from, records);
        diff.libs_after = libraries_of(to, records);
    }
    return diff;
}

} // namespace venvtx
