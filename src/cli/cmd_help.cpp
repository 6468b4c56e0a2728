// venvtx help [COMMAND]
#include "command.hpp"

#include "venvtx/core/closest.hpp"
#include "venvtx/core/error.hpp"

#include <iostream>
#include <memory>

namespace venvtx::cli {

Command register_help(CLI::App& parent) {
    auto name = std::make_shared<std::string>();
    CLI::App* app = parent.add_subcommand("help", "how to use venvtx, or one of its commands (as COMMAND --help)");
    app->add_option("command", *name, "the command");
    return {app, [name, &parent](const GlobalOptions&) {
                if (name->empty()) { // App::help() would describe the parsed subcommand, `help` itself
                    std::cout << parent.get_formatter()->make_help(&parent, "venvtx", CLI::AppFormatMode::Normal);
                    return 0;
                }
                std::vector<std::string> names;
                for (const CLI::App* sub : parent.get_subcommands([](const CLI::App*) { return true; })) {
                    if (sub->get_name() == *name) {
                        std::cout << sub->help("venvtx");
                        return 0;
                    }
                    names.push_back(sub->get_name());
                }
                auto near = closest(*name, names);
                throw usage_error("no command '" + *name + "'" + (near ? "; did you mean '" + *near + "'?" : "") +
                                  " (see venvtx --help)");
            }};
}

} // namespace venvtx::cli
