// How far one journaled path got, which tells a restore where its before-image is.
#pragma once

#include <string>

namespace venvtx {

enum class EntryProgress {
    planned,  // journaled; nothing moved yet (a crash may still have renamed it into staging)
    captured, // its before-image is in staging or the store
    applied,  // a path the transaction created or changed without a pre-image to keep
    touched,  // a watched command is about to change it (touch capture; pre-image in staging)
    snapshot, // link capture's record of the whole venv before the command
};

const char* to_string(EntryProgress progress);
// An unknown name reads as planned: a restore then looks for the before-image everywhere.
EntryProgress entry_progress_from(const std::string& text);

} // namespace venvtx
