// A directory of the live venv that a command renamed in its view (pip's stash of a package, a
// `mv`) is a redirect in the upper layer: its content stays in the lower layer under its old
// name. Before the layer is read, each such directory is made whole in the upper layer (copied
// up through the overlay, in a worker of its own) and marked opaque, its redirect dropped: the
// layer then holds only what preview/upper_layer reads (whiteouts, opaque directories, whole
// files). A stash deleted before the command ended leaves no redirect, and costs nothing.
#pragma once

#include "venvtx/preview/overlay_view.hpp"

#include <filesystem>

namespace venvtx {

void settle_renamed_dirs(const PreviewArea& area, const std::filesystem::path& venv_root);

} // namespace venvtx
