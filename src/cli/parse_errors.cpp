// explain_parse_error: CLI11's refusal, rewritten with the command line as typed.
#include "parse_errors.hpp"

#include "venvtx/core/closest.hpp"

#include <algorithm>
#include <optional>
#include <sstream>

namespace venvtx::cli {

namespace {

// The first word that is neither an option nor an option's value: the command typed.
std::optional<std::string> command_word(const std::vector<std::string>& typed) {
    for (auto it = typed.begin(); it != typed.end(); ++it) {
        if (*it == "--venv" || *it == "--store") {
            ++it;
            if (it == typed.end()) {
                break;
            }
            continue;
        }
        if (!it->empty() && it->front() != '-') {
            return *it;
        }
    }
    return std::nullopt;
}

bool is_command(CLI::App& app, const std::string& word) {
    auto commands = app.get_subcommands({});
    return std::any_of(commands.begin(), commands.end(), [&](const CLI::App* c) { return c->get_name() == word; });
}

std::string joined(const std::vector<std::string>& words) {
    std::string text;
    for (const auto& word : words) {
        text += (text.empty() ? "" : " ") + word;
    }
    return text;
}

// The words CLI11 did not expect, in the order typed (it parses them reversed).
std::vector<std::string> unexpected(const CLI::ParseError& error) {
    std::string message = error.what();
    std::vector<std::string> words;
    for (const std::string lead : {"The following arguments were not expected: ",
                                   "The following argument was not expected: "}) {
        if (message.rfind(lead, 0) == 0) {
            std::istringstream rest(message.substr(lead.size()));
            for (std::string word; rest >> word;) {
                words.insert(words.begin(), word);
            }
        }
    }
    return words;
}

} // namespace

std::string explain_parse_error(CLI::App& app, const std::vector<std::string>& typed, const CLI::ParseError& error) {
    std::optional<std::string> command = command_word(typed);
    if (command && !is_command(app, *command)) {
        std::vector<std::string> names;
        for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
            names.push_back(sub->get_name());
        }
        auto near = closest(*command, names);
        return "unknown command '" + *command + "'" + (near ? "; did you mean '" + *near + "'?" : "") +
               " (see venvtx --help)";
    }
    std::vector<std::string> extras = unexpected(error);
    if (extras.empty()) {
        return std::string(error.what()) + " (see venvtx " + command.value_or("") + (command ? " " : "") + "--help)";
    }
    std::string said = "unexpected argument" + std::string(extras.size() == 1 ? " " : "s ") + joined(extras);
    // From the first unexpected word on, what was typed belongs after "--".
    auto first = std::find(typed.begin(), typed.end(), extras.front());
    std::string as_meant = "venvtx " + joined({typed.begin(), first}) + " -- " + joined({first, typed.end()});
    if (command == "run" || command == "exec") {
        return said + ": the command goes after --, as in: " + as_meant;
    }
    if (command == "install") {
        return said + ": installer options go after --, as in: " + as_meant;
    }
    return said + " (see venvtx " + command.value_or("") + (command ? " " : "") + "--help)";
}

} // namespace venvtx::cli
