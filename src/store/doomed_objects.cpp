// Deleting doomed objects' files: those gone already are fine.
#include "venvtx/store/doomed_objects.hpp"

#include "venvtx/core/fs.hpp"
#include "venvtx/store/pruning.hpp"

#include <cerrno>

namespace venvtx {

void delete_doomed_objects(Store& store) {
    for (const auto& hex : doomed_objects(store.db())) {
        try {
            Fs::instance().unlink(store.objects().object_path(hex));
        } catch (const FsError& error) {
            if (error.errno_value() != ENOENT) {
                throw;
            }
        }
    }
    forget_doomed(store.db());
}

} // namespace venvtx
