// The two files `venvtx guard on` writes into a venv: a .pth whose one line sends this venv's
// pip install/uninstall through `venvtx run` at interpreter start, and a `uv` in bin/ that does
// the same for `uv pip install|uninstall|sync` aimed at the venv. Each names the venvtx binary
// that wrote it.
#pragma once

#include "venvtx/venv/layout.hpp"

#include <filesystem>
#include <optional>
#include <string>

namespace venvtx {

struct GuardHook {
    std::filesystem::path path;
    std::string text;
    unsigned mode;
};

// Where the guard's .pth lives (the venv's first site-packages) and its text: `venvtx` is the
// binary the hook execs, `store` the --store it passes (empty: the default <venv>/.venvtx).
GuardHook guard_pth(const VenvLayout& layout, const std::string& venvtx, const std::string& store);
// <venv>/bin/uv, the wrapper that finds the real uv further down PATH.
GuardHook guard_uv(const VenvLayout& layout, const std::string& venvtx, const std::string& store);

// Whether `text` is a hook the guard wrote (any venvtx build's), and the binary it names.
std::optional<std::string> guard_hook_binary(const std::string& text);

} // namespace venvtx
