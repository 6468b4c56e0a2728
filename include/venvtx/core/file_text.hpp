// A whole file read into memory, to its end (a file may grow while it is read).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace venvtx {

// The file's bytes; nullopt when it cannot be read, with `error` the errno (EISDIR for a directory).
std::optional<std::string> read_file_text(const std::filesystem::path& path, int& error);
std::optional<std::string> read_file_text(const std::filesystem::path& path);

} // namespace venvtx
