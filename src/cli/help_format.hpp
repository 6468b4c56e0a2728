// How --help reads: every line wrapped to the terminal ($COLUMNS, 80 when unset; the man page
// asks for less), and a usage line that shows what goes after "--".
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace venvtx::cli {

class HelpFormatter : public CLI::Formatter {
public:
    HelpFormatter();
    std::string make_usage(const CLI::App* app, std::string name) const override;
    std::string make_description(const CLI::App* app) const override;
    std::string make_option(const CLI::Option* option, bool is_positional) const override;
    std::string make_subcommand(const CLI::App* command) const override;

private:
    std::size_t m_width;
};

} // namespace venvtx::cli
