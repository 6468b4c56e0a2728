// read_setting, write_setting, delete_setting: one row of the settings table each.
#include "venvtx/store/settings.hpp"

namespace venvtx {

std::optional<std::string> read_setting(Database& db, const std::string& name) {
    Statement query = db.prepare("SELECT value FROM settings WHERE name = ?");
    query.bind(1, name);
    if (!query.step()) {
        return std::nullopt;
    }
    return query.text(0);
}

void write_setting(Database& db, const std::string& name, const std::string& value) {
    db.prepare("INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value")
        .bind(1, name)
        .bind(2, value)
        .run();
}

void delete_setting(Database& db, const std::string& name) {
    db.prepare("DELETE FROM settings WHERE name = ?").bind(1, name).run();
}

} // namespace venvtx
