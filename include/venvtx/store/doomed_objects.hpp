// The second half of pruning (store/pruning.hpp): the files of objects gc dropped from the index.
#pragma once

#include "venvtx/store/store.hpp"

namespace venvtx {

// Deletes the files of objects a gc dropped from the index (all of them, or what a killed gc
// left), then forgets them.
void delete_doomed_objects(Store& store);

} // namespace venvtx
