// bind_store: venv_facts rows venv.root and venv.python.
#include "venvtx/state/venv_binding.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/store/venv_facts.hpp"

namespace venvtx {

namespace {

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
    std::optional<std::string> root = venv_fact(db, "venv.root");
    if (root && *root != layout.root.string()) {
        throw Error(ExitCode::usage, "store_bound",
                    "the store " + store.root().string() + " belongs to the venv " + *root + " (python " +
                        venv_fact(db, "venv.python").value_or("?") + "), not to " + layout.root.string() +
                        ": nothing was changed (give each venv its own store: --store DIR or VENVTX_STORE)",
                    {{"store", store.root().string()}, {"venv", *root}});
    }
    if (!root && !db.read_only()) {
        set_venv_facts(db, {{"venv.root", layout.root.string()}, {"venv.python", interpreter_of(layout)}});
    }
}

} // namespace venvtx
