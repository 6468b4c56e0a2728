// Fuzz target: the ELF reader must never crash, loop or read past its input, nor fail silently.
#include "venvtx/elf/elf_file.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

// Aborts when any string is longer than the input that had to hold it.
void check_fits(const std::vector<std::string>& strings, std::size_t size) {
    for (const auto& text : strings) {
        if (text.size() > size) {
            std::abort();
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view bytes(reinterpret_cast<const char*>(data), size);
    venvtx::ElfResult result = venvtx::parse_elf(bytes);
    if (result.status != venvtx::ElfStatus::ok) {
        if (result.problem.empty() || result.problem.find('\n') != std::string::npos) {
            std::abort(); // every failure says why, in one line
        }
        return 0;
    }
    const venvtx::ElfInfo& info = result.info;
    if (info.soname.size() > size || info.needed.size() > size) {
        std::abort();
    }
    check_fits(info.needed, size);
    check_fits(info.rpath, size);
    check_fits(info.runpath, size);
    return 0;
}
