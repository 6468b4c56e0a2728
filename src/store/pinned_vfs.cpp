// pinned_vfs: the unix VFS, less its resolving of symlinks in a file's name.
#include "venvtx/store/pinned_vfs.hpp"

#include "venvtx/core/error.hpp"

#include <cstring>
#include <sqlite3.h>

namespace venvtx {

namespace {

int name_as_given(sqlite3_vfs*, const char* name, int size, char* out) {
    if (name[0] != '/' || static_cast<int>(std::strlen(name)) >= size) {
        return SQLITE_CANTOPEN;
    }
    std::strcpy(out, name);
    return SQLITE_OK;
}

} // namespace

const char* pinned_vfs() {
    static const char* name = [] {
        sqlite3_vfs* unix_vfs = sqlite3_vfs_find("unix");
        if (unix_vfs == nullptr) {
            throw Error(ExitCode::internal, "SQLite has no unix VFS");
        }
        static sqlite3_vfs pinned = *unix_vfs; // its pAppData (the locking style) stays the unix one's
        pinned.zName = "venvtx-pinned";
        pinned.pNext = nullptr;
        pinned.xFullPathname = name_as_given;
        if (sqlite3_vfs_register(&pinned, 0) != SQLITE_OK) {
            throw Error(ExitCode::internal, "cannot register SQLite's pinned VFS");
        }
        return pinned.zName;
    }();
    return name;
}

} // namespace venvtx
