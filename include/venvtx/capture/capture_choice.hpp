// Which capture `--capture auto` picks for an install. Touch capture costs a round trip per
// file-changing call (about 100 µs in a VM, several calls per file written), link capture one
// link() and two stats per venv file (about 45 µs): an upgrade that rewrites a large share of
// the venv (torch in a torch venv) is cheaper with link capture.
#pragma once

#include "venvtx/venv/layout.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace venvtx {

struct CaptureEstimate {
    std::size_t named_files = 0;  // RECORD lines of the installed distributions SPEC names
    std::size_t venv_files = 0;   // RECORD lines of every installed distribution
    // Touch capture makes about 7 watched calls per file it rewrites (write, bytecode, stash
    // cleanup) at about twice the cost of linking one file: it wins below 1/15 of the venv.
    bool prefer_link() const { return named_files * 15 > venv_files; }
};

// `specs` as pip takes them: "torch==2.12", "torch[extra]>=2", "./torch-2.12-....whl".
CaptureEstimate estimate_capture(const VenvLayout& layout, const std::vector<std::string>& specs);

// The distribution name a requirement or wheel path names, PEP 503-normalized ("" if none).
std::string spec_name(const std::string& spec);

} // namespace venvtx
