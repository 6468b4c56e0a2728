// SQLite's unix VFS with every file name kept as given. Without it SQLite resolves the symlinks
// of a name itself and opens the resulting path string, so a name through /proc/self/fd/N (the
// store directory venvtx opened and checked) would lead wherever that path leads later: into a
// directory a venv's owner swapped in for root.
#pragma once

namespace venvtx {

// The VFS's name, registered on first use.
const char* pinned_vfs();

} // namespace venvtx
