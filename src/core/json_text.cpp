// json_text: nlohmann's layout, with strings written here so that any bytes go through.
#include "venvtx/core/json_text.hpp"

#include <cstdio>

namespace venvtx {

namespace {

// The length of the valid UTF-8 sequence at `i` (RFC 3629: no overlong form, no surrogate,
// nothing above U+10FFFF), or 0.
std::size_t utf8_length(const std::string& text, std::size_t i) {
    auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    unsigned char lead = byte(i);
    std::size_t length = lead < 0x80 ? 1 : (lead & 0xE0) == 0xC0 ? 2 : (lead & 0xF0) == 0xE0 ? 3
                       : (lead & 0xF8) == 0xF0 ? 4 : 0;
    if (length == 0 || i + length > text.size()) {
        return 0;
    }
    std::uint32_t point = length == 1 ? lead : lead & (0x7F >> length);
    for (std::size_t k = 1; k < length; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) {
            return 0;
        }
        point = (point << 6) | (byte(i + k) & 0x3F);
    }
    static const std::uint32_t k_least[] = {0, 0, 0x80, 0x800, 0x10000};
    bool surrogate = point >= 0xD800 && point <= 0xDFFF;
    return point < k_least[length] || surrogate || point > 0x10FFFF ? 0 : length;
}

void append_string(std::string& out, const std::string& text) {
    out += '"';
    char escape[8];
    for (std::size_t i = 0; i < text.size();) {
        unsigned char c = static_cast<unsigned char>(text[i]);
        std::size_t length = utf8_length(text, i);
        if (length == 0) {
            std::snprintf(escape, sizeof escape, "\\udc%02x", c);
            out += escape;
            ++i;
            continue;
        }
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\b') {
            out += "\\b";
        } else if (c == '\f') {
            out += "\\f";
        } else if (c < 0x20) {
            std::snprintf(escape, sizeof escape, "\\u%04x", c);
            out += escape;
        } else {
            out.append(text, i, length);
        }
        i += length;
    }
    out += '"';
}

void append_value(std::string& out, const nlohmann::json& value, int indent, int depth) {
    auto newline = [&](int level) {
        if (indent >= 0) {
            out += '\n';
            out.append(static_cast<std::size_t>(indent * level), ' ');
        }
    };
    if (value.is_string()) {
        append_string(out, value.get_ref<const std::string&>());
    } else if (value.is_object() && !value.empty()) {
        out += '{';
        bool first = true;
        for (const auto& [key, member] : value.items()) {
            out += first ? "" : ",";
            first = false;
            newline(depth + 1);
            append_string(out, key);
            out += indent >= 0 ? ": " : ":";
            append_value(out, member, indent, depth + 1);
        }
        newline(depth);
        out += '}';
    } else if (value.is_array() && !value.empty()) {
        out += '[';
        bool first = true;
        for (const auto& element : value) {
            out += first ? "" : ",";
            first = false;
            newline(depth + 1);
            append_value(out, element, indent, depth + 1);
        }
        newline(depth);
        out += ']';
    } else {
        out += value.dump(); // numbers, booleans, null, {} and []
    }
}

} // namespace

std::string json_text(const nlohmann::json& value, int indent) {
    std::string out;
    append_value(out, value, indent, 0);
    return out;
}

std::string stored_json_text(const nlohmann::json& value) {
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string valid_utf8(const std::string& bytes) {
    return nlohmann::json::parse(stored_json_text(bytes)).get<std::string>();
}

} // namespace venvtx
