// The states and record_texts tables.
#include "venvtx/state/state_index.hpp"

#include "venvtx/core/error.hpp"

namespace venvtx {

void save_state(Database& db, const VenvState& state) {
    db.prepare("INSERT OR IGNORE INTO states (id, dists) VALUES (?, ?)")
        .bind(1, state.id)
        .bind(2, dists_json(state.dists).dump())
        .run();
}

bool has_state(Database& db, const std::string& id) {
    Statement query = db.prepare("SELECT 1 FROM states WHERE id = ?");
    query.bind(1, id);
    return query.step();
}

std::optional<VenvState> load_state(Database& db, const std::string& id) {
    Statement query = db.prepare("SELECT dists FROM states WHERE id = ?");
    query.bind(1, id);
    if (!query.step()) {
        return std::nullopt;
    }
    try {
        return VenvState{id, dists_from_json(nlohmann::json::parse(query.text(0)))};
    } catch (const nlohmann::json::exception& error) {
        throw Error(ExitCode::internal, "store index: state " + short_state_id(id) + " is damaged: " + error.what());
    }
}

bool has_record_text(Database& db, const std::string& sha256) {
    Statement query = db.prepare("SELECT 1 FROM record_texts WHERE sha256 = ?");
    query.bind(1, sha256);
    return query.step();
}

void save_record_text(Database& db, const std::string& sha256, const std::string& text) {
    db.prepare("INSERT OR IGNORE INTO record_texts (sha256, text) VALUES (?, ?)").bind(1, sha256).bind(2, text).run();
}

std::optional<std::string> load_record_text(Database& db, const std::string& sha256) {
    Statement query = db.prepare("SELECT text FROM record_texts WHERE sha256 = ?");
    query.bind(1, sha256);
    if (!query.step()) {
        return std::nullopt;
    }
    return query.text(0);
}

} // namespace venvtx
