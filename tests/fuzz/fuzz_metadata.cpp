// Fuzz target: METADATA and entry_points.txt readers accept any bytes without crashing.
#include "venvtx/venv/metadata.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    venvtx::Metadata metadata = venvtx::parse_metadata(text);
    if (metadata.name.size() > size || metadata.version.size() > size) {
        std::abort();
    }
    for (const auto& name : venvtx::parse_script_names(text)) {
        if (name.empty() || name.size() > size) {
            std::abort();
        }
    }
    return 0;
}
