// Shell completion scripts generated from the CLI11 app itself, so they never drift from it.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace venvtx::cli {

// The completion script for `shell` (bash, zsh or fish); a usage Error for any other shell.
std::string completion_script(const CLI::App& app, const std::string& shell);

} // namespace venvtx::cli
