// Fuzz target: any bytes (a name, a path, a probe's or an installer's output) go through
// json_text without an exception, come out as valid UTF-8, and decode back to the same bytes.
#include "venvtx/core/json_text.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace {

bool valid_utf8(const std::string& text) {
    for (std::size_t i = 0; i < text.size();) {
        unsigned char c = static_cast<unsigned char>(text[i]);
        std::size_t length = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (length == 0 || i + length > text.size()) {
            return false;
        }
        for (std::size_t k = 1; k < length; ++k) {
            if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) {
                return false;
            }
        }
        i += length;
    }
    return true;
}

// The JSON string literal back to bytes: \udc80..\udcff are the escaped bytes, the rest as JSON.
std::string decode(const std::string& literal) {
    if (literal.size() < 2 || literal.front() != '"' || literal.back() != '"') {
        std::abort();
    }
    std::string out;
    for (std::size_t i = 1; i + 1 < literal.size(); ++i) {
        if (literal[i] != '\\') {
            out += literal[i];
            continue;
        }
        char kind = literal[++i];
        switch (kind) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case '"': case '\\': out += kind; break;
        case 'u': {
            unsigned value = static_cast<unsigned>(std::stoul(literal.substr(i + 1, 4), nullptr, 16));
            i += 4;
            if (value >= 0xDC80 && value <= 0xDCFF) {
                out += static_cast<char>(value - 0xDC00);
            } else if (value < 0x20) {
                out += static_cast<char>(value);
            } else {
                std::abort(); // json_text escapes nothing else
            }
            break;
        }
        default: std::abort();
        }
    }
    return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string bytes(reinterpret_cast<const char*>(data), size);
    std::string text = venvtx::json_text(bytes, -1);
    if (!valid_utf8(text) || decode(text) != bytes) {
        std::abort();
    }
    std::string document = venvtx::json_text({{"path", bytes}, {bytes, {bytes, 1}}});
    if (!valid_utf8(document)) {
        std::abort();
    }
    return 0;
}
