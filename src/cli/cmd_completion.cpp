// venvtx completion SHELL
#include "command.hpp"

#include "completion.hpp"

#include <iostream>
#include <memory>

namespace venvtx::cli {

Command register_completion(CLI::App& parent) {
    auto shell = std::make_shared<std::string>();
    CLI::App* app = parent.add_subcommand(
        "completion", "print a completion script for bash, zsh or fish (e.g. `source <(venvtx completion bash)`)");
    app->add_option("shell", *shell, "bash, zsh or fish")->required();
    return {app, [shell, &parent](const GlobalOptions&) {
                std::cout << completion_script(parent, *shell);
                return 0;
            }};
}

} // namespace venvtx::cli
