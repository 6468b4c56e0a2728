// venv_fact and set_venv_facts.
#include "venvtx/store/venv_facts.hpp"

namespace venvtx {

std::optional<std::string> venv_fact(Database& db, const std::string& name) {
    Statement query = db.prepare("SELECT value FROM venv_facts WHERE name = ?");
    query.bind(1, name);
    return query.step() ? std::optional(query.text(0)) : std::nullopt;
}

void set_venv_facts(Database& db, const std::vector<std::pair<std::string, std::string>>& facts) {
    Statement set = db.prepare("INSERT OR REPLACE INTO venv_facts (name, value) VALUES (?, ?)");
    for (const auto& [name, value] : facts) {
        set.bind(1, name).bind(2, value).run();
    }
}

} // namespace venvtx
