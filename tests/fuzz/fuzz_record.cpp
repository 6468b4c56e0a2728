// Fuzz target: the RECORD reader must never crash, loop or invent rows; bad input is an Error.
#include "venvtx/core/error.hpp"
#include "venvtx/venv/record.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        auto entries = venvtx::parse_record(text, "RECORD");
        for (const auto& entry : entries) {
            if (entry.path.empty() || entry.path.size() > size) {
                std::abort(); // a row whose path the input could not have held
            }
        }
    } catch (const venvtx::Error& error) {
        if (error.code() != venvtx::ExitCode::usage) {
            std::abort();
        }
    }
    return 0;
}
