// resolve_store_root: where a venv's store lives.
#include "venvtx/txn/context.hpp"

#include "venvtx/core/error.hpp"

namespace venvtx {

std::filesystem::path resolve_store_root(const VenvLayout& layout,
                                         const std::optional<std::filesystem::path>& explicit_root) {
    if (!explicit_root) {
        return layout.root / ".venvtx";
    }
    if (explicit_root->empty()) {
        throw usage_error("--store names no directory (it is empty)");
    }
    return std::filesystem::weakly_canonical(std::filesystem::absolute(*explicit_root));
}

} // namespace venvtx
