// bind_store: venv_facts rows venv.root and venv.python.
#include "venvtx/state/venv_binding.hpp"

#include "venvtx/core/error.hpp"

namespace venvtx {

namespace {

std::optional<std::string> setting(Database& db, const char* name) {
    Statement query = db.prepare("SELECT value FROM venv_facts WHERE name = ?");
    query.bind(1, std::string(name));
    return query.step() ? std::optional(query.text(0)) : std::nullopt;
}

std::string interpreter_of(const VenvLayout& layout) {
    std::error_code ec;
    std::filesystem::path target = std::filesystem::canonical(layout.python, ec);
    return ec ? layout.python.string() : target.string();
}

} // namespace

void bind_store(Store& store, const VenvLayout& layout) {
    if (store.root().parent_path() == layout.root) {
        return; // <venv>/.venvtx belongs to the venv it lies in, wherever that moves
    }
    Database& db = store.db();
    std::optional<std::string> root = setting(db, "venv.root");
    if (root && *root != layout.root.string()) {
        throw usage_error("the store " + store.root().string() + " belongs to the venv " + *root + " (python " +
                          setting(db, "venv.python").value_or("?") + "), not to " + layout.root.string() +
                          ": nothing was changed (give each venv its own store: --store DIR or VENVTX_STORE)");
    }
    if (!root && !db.read_only()) {
        db.prepare("INSERT INTO venv_facts (name, value) VALUES ('venv.root', ?), ('venv.python', ?)")
            .bind(1, layout.root.string())
            .bind(2, interpreter_of(layout))
            .run();
    }
}

} // namespace venvtx
