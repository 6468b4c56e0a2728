// A bounds-checked reader of an ELF file's dynamic section: SONAME, NEEDED, RPATH, RUNPATH.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace venvtx {

struct ElfInfo {
    std::string soname;               // DT_SONAME, may be empty
    std::vector<std::string> needed;  // DT_NEEDED, in order
    std::vector<std::string> rpath;   // DT_RPATH split on ':', unexpanded ("$ORIGIN/../lib")
    std::vector<std::string> runpath; // DT_RUNPATH split on ':'
    bool nodeflib = false;            // DF_1_NODEFLIB in DT_FLAGS_1
    bool is_64 = true;
    std::uint16_t machine = 0; // e_machine

    bool operator==(const ElfInfo&) const = default;
};

enum class ElfStatus { ok, not_elf, malformed };

struct ElfResult {
    ElfStatus status = ElfStatus::not_elf;
    ElfInfo info;
    std::string problem; // one line, set unless status is ok
};

// Parses ELFCLASS32/64, either byte order. Never reads out of bounds, never throws on bad
// input: a file not starting with \x7fELF is not_elf, a damaged one malformed. A file without
// PT_DYNAMIC (a static binary, an object file) is ok with empty fields. Empty components of a
// search path are kept: ld.so reads them as the working directory.
ElfResult parse_elf(std::string_view bytes);

// The same as parse_elf on the file's bytes, reading only the header, program headers,
// PT_DYNAMIC and the strings it names. A file that is not a regular file is not_elf; one that
// cannot be opened or read throws a venvtx::Error (system_error).
ElfResult read_elf_file(const std::filesystem::path& path);

} // namespace venvtx
