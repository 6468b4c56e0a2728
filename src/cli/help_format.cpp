// HelpFormatter: CLI11's help, wrapped, with the usage lines CLI11 cannot infer.
#include "help_format.hpp"

#include <cstdlib>
#include <map>
#include <sstream>

namespace venvtx::cli {

namespace {

// Usage lines CLI11 would get wrong: what comes after "--" is not one of its positionals.
const std::map<std::string, std::string> k_usage = {
    {"install", "venvtx install [OPTIONS] [SPEC...] [-- INSTALLER-ARGS...]"},
    {"run", "venvtx run [OPTIONS] -- CMD [ARGS...]"},
    {"sync", "venvtx sync --to POINT [OPTIONS] [-- INSTALLER-ARGS...]"},
    {"exec", "venvtx exec [OPTIONS] -- CMD [ARGS...]"},
    {"config", "venvtx config [KEY [VALUE...]] [--unset]"},
};

// `text` in lines of at most `width` columns, each after `indent`; the first line starts at
// column `first_at` (text already there).
std::string wrapped(const std::string& text, std::size_t first_at, std::size_t indent, std::size_t width) {
    std::istringstream words(text);
    std::string out;
    std::size_t column = first_at;
    bool fresh = true;
    for (std::string word; words >> word;) {
        if (!fresh && column + 1 + word.size() > width) {
            out += "\n" + std::string(indent, ' ');
            column = indent;
            fresh = true;
        }
        out += (fresh ? "" : " ") + word;
        column += (fresh ? 0 : 1) + word.size();
        fresh = false;
    }
    return out;
}

// A left column (name) and its description, the description wrapped at `width`.
std::string two_columns(const std::string& name, const std::string& description, std::size_t column,
                        std::size_t width) {
    std::string out = "  " + name;
    if (description.empty()) {
        return out + "\n";
    }
    if (out.size() + 1 > column) {
        out += "\n" + std::string(column, ' ');
    } else {
        out += std::string(column - out.size(), ' ');
    }
    return out + wrapped(description, column, column, width) + "\n";
}

std::size_t terminal_width() {
    const char* columns = std::getenv("COLUMNS");
    long width = columns != nullptr ? std::strtol(columns, nullptr, 10) : 0;
    return width >= 60 && width <= 200 ? static_cast<std::size_t>(width) : 80;
}

} // namespace

HelpFormatter::HelpFormatter() : m_width(terminal_width()) { column_width(26); }

std::string HelpFormatter::make_usage(const CLI::App* app, std::string name) const {
    auto found = k_usage.find(app->get_name());
    if (found == k_usage.end()) {
        return CLI::Formatter::make_usage(app, std::move(name));
    }
    return "Usage: " + found->second + "\n";
}

std::string HelpFormatter::make_description(const CLI::App* app) const {
    std::string description = app->get_description();
    return description.empty() ? "" : wrapped(description, 0, 0, m_width) + "\n";
}

std::string HelpFormatter::make_option(const CLI::Option* option, bool is_positional) const {
    return two_columns(make_option_name(option, is_positional) + make_option_opts(option), make_option_desc(option),
                       get_column_width(), m_width);
}

std::string HelpFormatter::make_subcommand(const CLI::App* command) const {
    return two_columns(command->get_display_name(true), command->get_description(), get_column_width(), m_width);
}

} // namespace venvtx::cli
