// The venv's files against their distributions' RECORDs (`status --files`, `--untracked`): each
// RECORD-listed file is stat'ed; one whose InodeKey is the one it had when its bytes last
// matched RECORD's hash is not read again (`record_checks`); any other is hashed.
#pragma once

#include "venvtx/state/venv_state.hpp"
#include "venvtx/store/database.hpp"
#include "venvtx/venv/layout.hpp"

#include <string>
#include <vector>

namespace venvtx {

struct FileFinding {
    std::string what;  // missing | not a file | size | content | untracked
    std::string path;  // venv-relative
    std::string dist;  // empty for an untracked file
};

// Every RECORD-listed file (with a hash) that is not as RECORD says, in the state `now`.
std::vector<FileFinding> check_record_files(const VenvLayout& layout, Database& db, const VenvState& now);

// Files under site-packages that no RECORD of `now` lists (__pycache__ directories aside: an
// interpreter writes them as it imports).
std::vector<FileFinding> untracked_files(const VenvLayout& layout, Database& db, const VenvState& now);

} // namespace venvtx
