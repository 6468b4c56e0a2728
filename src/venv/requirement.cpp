// parse_requirement and a small PEP 508 marker evaluator (or/and/parentheses, comparisons of
// environment values and quoted strings; versions compared by release segments).
#include "venvtx/venv/requirement.hpp"

#include "venvtx/venv/names.hpp"

#include <cctype>
#include <cstdlib>
#include <map>
#include <vector>

namespace venvtx {

namespace {

std::string trimmed(const std::string& text) {
    std::size_t first = text.find_first_not_of(" \t");
    std::size_t last = text.find_last_not_of(" \t\r");
    return first == std::string::npos ? "" : text.substr(first, last - first + 1);
}

std::vector<long> release_of(const std::string& version) {
    std::vector<long> parts;
    const char* at = version.c_str();
    while (std::isdigit(static_cast<unsigned char>(*at))) {
        char* end = nullptr;
        parts.push_back(std::strtol(at, &end, 10));
        at = end;
        if (*at != '.') {
            break;
        }
        ++at;
    }
    return parts;
}

int compare_versions(const std::string& a, const std::string& b) {
    std::vector<long> x = release_of(a);
    std::vector<long> y = release_of(b);
    for (std::size_t i = 0; i < std::max(x.size(), y.size()); ++i) {
        long left = i < x.size() ? x[i] : 0;
        long right = i < y.size() ? y[i] : 0;
        if (left != right) {
            return left < right ? -1 : 1;
        }
    }
    return 0;
}

class MarkerParser {
public:
    MarkerParser(const std::string& text, const MarkerEnvironment& env) : m_text(text) {
        std::string version = env.python_full_version;
        std::vector<long> release = release_of(version);
        m_values = {{"os_name", "posix"},
                    {"sys_platform", "linux"},
                    {"platform_system", "Linux"},
                    {"platform_machine", env.platform_machine},
                    {"implementation_name", "cpython"},
                    {"platform_python_implementation", "CPython"},
                    {"extra", ""}};
        if (release.size() >= 2) {
            m_values["python_version"] = std::to_string(release[0]) + "." + std::to_string(release[1]);
            m_values["python_full_version"] = version;
            m_values["implementation_version"] = version;
        }
    }

    // nullopt: unreadable, or it depends on a value not known here.
    std::optional<bool> parse() {
        std::optional<bool> value = parse_or();
        skip_space();
        return m_pos == m_text.size() ? value : std::nullopt;
    }

private:
    std::optional<bool> parse_or() {
        std::optional<bool> value = parse_and();
        while (take_word("or")) {
            std::optional<bool> right = parse_and();
            value = (value == true || right == true) ? std::optional(true)
                    : (value && right) ? std::optional(false) : std::nullopt;
        }
        return value;
    }

    std::optional<bool> parse_and() {
        std::optional<bool> value = parse_expression();
        while (take_word("and")) {
            std::optional<bool> right = parse_expression();
            value = (value == false || right == false) ? std::optional(false)
                    : (value && right) ? std::optional(true) : std::nullopt;
        }
        return value;
    }

    std::optional<bool> parse_expression() {
        skip_space();
        if (take("(")) {
            std::optional<bool> value = parse_or();
            return take(")") ? value : std::nullopt;
        }
        bool left_is_variable = false;
        bool right_is_variable = false;
        std::optional<std::string> left = parse_value(left_is_variable);
        std::string op = parse_operator();
        std::optional<std::string> right = parse_value(right_is_variable);
        if (!left || !right || op.empty()) {
            return std::nullopt;
        }
        return compare(*left, op, *right, left_is_variable || right_is_variable);
    }

    std::optional<bool> compare(const std::string& left, const std::string& op, const std::string& right,
                                bool versions) const {
        if (op == "in") {
            return right.find(left) != std::string::npos;
        }
        if (op == "not in") {
            return right.find(left) == std::string::npos;
        }
        bool version_like = versions && !release_of(left).empty() && !release_of(right).empty();
        if (!version_like) {
            if (op == "==" || op == "===") {
                return left == right;
            }
            if (op == "!=") {
                return left != right;
            }
            return std::nullopt;
        }
        int order = compare_versions(left, right);
        if (op == "==" || op == "===") {
            return order == 0;
        }
        if (op == "!=") {
            return order != 0;
        }
        if (op == "<") {
            return order < 0;
        }
        if (op == "<=") {
            return order <= 0;
        }
        if (op == ">") {
            return order > 0;
        }
        if (op == ">=") {
            return order >= 0;
        }
        if (op == "~=") { // >= right, and the same release up to right's last segment but one
            std::vector<long> l = release_of(left);
            std::vector<long> r = release_of(right);
            bool prefix = r.size() >= 2 && l.size() >= r.size() - 1 &&
                          std::equal(r.begin(), r.end() - 1, l.begin());
            return order >= 0 && prefix;
        }
        return std::nullopt;
    }

    std::optional<std::string> parse_value(bool& is_variable) {
        skip_space();
        if (m_pos < m_text.size() && (m_text[m_pos] == '"' || m_text[m_pos] == '\'')) {
            char quote = m_text[m_pos++];
            std::size_t end = m_text.find(quote, m_pos);
            if (end == std::string::npos) {
                return std::nullopt;
            }
            std::string value = m_text.substr(m_pos, end - m_pos);
            m_pos = end + 1;
            return value;
        }
        std::size_t start = m_pos;
        while (m_pos < m_text.size() && (std::isalnum(static_cast<unsigned char>(m_text[m_pos])) || m_text[m_pos] == '_' ||
                                         m_text[m_pos] == '.')) {
            ++m_pos;
        }
        auto found = m_values.find(m_text.substr(start, m_pos - start));
        is_variable = true;
        if (found == m_values.end() || (found->first != "extra" && found->second.empty())) {
            return std::nullopt;
        }
        return found->second;
    }

    std::string parse_operator() {
        skip_space();
        for (const char* op : {"===", "==", "!=", "<=", ">=", "~=", "<", ">"}) {
            if (take(op)) {
                return op;
            }
        }
        if (take_word("in")) {
            return "in";
        }
        std::size_t saved = m_pos;
        if (take_word("not") && take_word("in")) {
            return "not in";
        }
        m_pos = saved;
        return "";
    }

    void skip_space() {
        while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos]))) {
            ++m_pos;
        }
    }

    bool take(const std::string& token) {
        skip_space();
        if (m_text.compare(m_pos, token.size(), token) == 0) {
            m_pos += token.size();
            return true;
        }
        return false;
    }

    bool take_word(const std::string& word) {
        skip_space();
        std::size_t end = m_pos + word.size();
        bool boundary = end >= m_text.size() || !std::isalnum(static_cast<unsigned char>(m_text[end]));
        if (m_text.compare(m_pos, word.size(), word) == 0 && boundary) {
            m_pos = end;
            return true;
        }
        return false;
    }

    const std::string& m_text;
    std::map<std::string, std::string> m_values;
    std::size_t m_pos = 0;
};

} // namespace

std::optional<Requirement> parse_requirement(const std::string& line) {
    Requirement requirement;
    requirement.text = trimmed(line);
    std::size_t semicolon = requirement.text.find(';');
    if (semicolon != std::string::npos) {
        requirement.marker = trimmed(requirement.text.substr(semicolon + 1));
    }
    std::size_t end = 0;
    const std::string& text = requirement.text;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '-' ||
                                 text[end] == '_' || text[end] == '.')) {
        ++end;
    }
    if (end == 0) {
        return std::nullopt;
    }
    requirement.name = normalize_name(text.substr(0, end));
    return requirement;
}

bool marker_holds(const std::string& marker, const MarkerEnvironment& env) {
    if (marker.empty()) {
        return true;
    }
    return MarkerParser(marker, env).parse().value_or(true);
}

} // namespace venvtx
