// A strict CSV reader for RECORD files.
#include "venvtx/venv/record.hpp"

#include "venvtx/core/error.hpp"

#include <algorithm>

namespace venvtx {

namespace {

class CsvReader {
public:
    explicit CsvReader(std::string_view text) : m_text(text) {}

    bool at_end() const { return m_pos >= m_text.size(); }
    int line() const { return m_line; }

    // Reads one row; returns false with `error` set on malformed input.
    bool read_row(std::vector<std::string>& fields, std::string& error) {
        fields.assign(1, std::string());
        bool quoted_field = false;
        while (m_pos < m_text.size()) {
            char c = m_text[m_pos];
            if (c == '"' && fields.back().empty() && !quoted_field) {
                if (!read_quoted(fields.back(), error)) {
                    return false;
                }
                quoted_field = true;
                continue;
            }
            if (c == ',') {
                fields.emplace_back();
                quoted_field = false;
                ++m_pos;
                continue;
            }
            if (c == '\r' && m_pos + 1 < m_text.size() && m_text[m_pos + 1] == '\n') {
                ++m_pos;
                continue;
            }
            if (c == '\n') {
                ++m_pos;
                ++m_line;
                return true;
            }
            if (quoted_field) {
                error = "unexpected text after a closing quote";
                return false;
            }
            if (c == '"') {
                error = "stray quote inside an unquoted field";
                return false;
            }
            size_t end = m_pos + 1; // the plain run up to the next special character, at once
            while (end < m_text.size() && !is_special(m_text[end])) {
                ++end;
            }
            fields.back().append(m_text.substr(m_pos, end - m_pos));
            m_pos = end;
        }
        ++m_line;
        return true;
    }

    // The common row: one line, no quote, no '\r', exactly two commas. Reads it and returns true;
    // otherwise reads nothing and returns false (read_row takes it, with its errors).
    bool read_plain_row(std::vector<std::string>& fields) {
        size_t end = m_text.find('\n', m_pos);
        std::string_view row = m_text.substr(m_pos, end == std::string_view::npos ? std::string_view::npos : end - m_pos);
        size_t first = row.find(',');
        size_t second = first == std::string_view::npos ? first : row.find(',', first + 1);
        if (second == std::string_view::npos || row.find(',', second + 1) != std::string_view::npos ||
            row.find('"') != std::string_view::npos || row.find('\r') != std::string_view::npos) {
            return false;
        }
        fields.resize(3);
        fields[0].assign(row.substr(0, first));
        fields[1].assign(row.substr(first + 1, second - first - 1));
        fields[2].assign(row.substr(second + 1));
        m_pos += row.size() + (end == std::string_view::npos ? 0 : 1);
        ++m_line;
        return true;
    }

private:
    static bool is_special(char c) { return c == ',' || c == '"' || c == '\n' || c == '\r'; }

    bool read_quoted(std::string& field, std::string& error) {
        ++m_pos; // opening quote
        while (m_pos < m_text.size()) {
            char c = m_text[m_pos++];
            if (c == '"') {
                if (m_pos < m_text.size() && m_text[m_pos] == '"') {
                    field.push_back('"');
                    ++m_pos;
                    continue;
                }
                return true;
            }
            if (c == '\n') {
                ++m_line;
            }
            field.push_back(c);
        }
        error = "unterminated quoted field (file cut short?)";
        return false;
    }

    std::string_view m_text;
    size_t m_pos = 0;
    int m_line = 1;
};

std::optional<std::uint64_t> parse_size(const std::string& text, bool& ok) {
    ok = true;
    if (text.empty()) {
        return std::nullopt;
    }
    std::uint64_t value = 0;
    for (char c : text) {
        if (c < '0' || c > '9' || value > (UINT64_MAX - 9) / 10) {
            ok = false;
            return std::nullopt;
        }
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return value;
}

} // namespace

std::vector<RecordEntry> parse_record(std::string_view text, const std::string& source) {
    std::vector<RecordEntry> entries;
    entries.reserve(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
    CsvReader reader(text);
    std::vector<std::string> fields;
    while (!reader.at_end()) {
        int line = reader.line();
        std::string error;
        if (!reader.read_plain_row(fields) && !reader.read_row(fields, error)) {
            throw usage_error(source + ":" + std::to_string(line) + ": malformed RECORD: " + error);
        }
        if (fields.size() == 1 && fields[0].empty()) {
            continue; // blank line
        }
        if (fields.size() != 3) {
            throw usage_error(source + ":" + std::to_string(line) + ": malformed RECORD: expected 3 fields, found " +
                              std::to_string(fields.size()));
        }
        if (fields[0].empty()) {
            throw usage_error(source + ":" + std::to_string(line) + ": malformed RECORD: empty path");
        }
        if (fields[0].find('\0') != std::string::npos) {
            throw usage_error(source + ":" + std::to_string(line) + ": malformed RECORD: NUL in path");
        }
        bool size_ok = true;
        auto size = parse_size(fields[2], size_ok);
        if (!size_ok) {
            throw usage_error(source + ":" + std::to_string(line) + ": malformed RECORD: bad size '" +
                              fields[2] + "'");
        }
        // A sha256 digest in urlsafe base64 is exactly 43 characters: a shorter one is torn.
        if (fields[1].rfind("sha256=", 0) == 0 && fields[1].size() != 7 + 43) {
            throw usage_error(source + ":" + std::to_string(line) + ": malformed RECORD: bad sha256 '" +
                              fields[1] + "' (file cut short?)");
        }
        if (!fields[1].empty() && fields[1].find('=') == std::string::npos) {
            throw usage_error(source + ":" + std::to_string(line) + ": malformed RECORD: bad hash '" +
                              fields[1] + "'");
        }
        entries.push_back({std::move(fields[0]), std::move(fields[1]), size});
    }
    return entries;
}

} // namespace venvtx
