// What a command line CLI11 refused means, said as a person would need it: the unknown command,
// the arguments in the order they were typed, and where they belong (`run -- CMD`, installer
// options after `install ... --`).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace venvtx::cli {

// `typed`: the arguments before any "--", in the order typed.
std::string explain_parse_error(CLI::App& app, const std::vector<std::string>& typed, const CLI::ParseError& error);

} // namespace venvtx::cli
