// venvtx: parse the command line, run one command, map errors to the contract's exit codes.
#include "command.hpp"

#include "venvtx/core/error.hpp"

#include <cstdio>
#include <iostream>

namespace {

void print_error(bool json, int code, const std::string& message) {
    if (json) {
        nlohmann::json document = {{"error", {{"code", code}, {"message", message}}}};
        std::cout << document.dump() << std::endl;
    } else {
        std::cerr << "venvtx: " << message << std::endl;
    }
}

} // namespace

int main(int argc, char** argv) {
    using namespace venvtx;
    using namespace venvtx::cli;
    GlobalOptions global;
    global.argv.assign(argv, argv + argc);
    global.argv[0] = "venvtx";
    CLI::App app("venvtx: every change to a Python venv as a transaction — probe it, and restore the "
                 "exact prior bytes when the probe fails.",
                 "venvtx");
    app.require_subcommand(1);
    app.add_option("--venv", global.venv, "the venv (default: $VIRTUAL_ENV, then ./.venv)");
    app.add_option("--store", global.store, "where history and objects live (default: <venv>/.venvtx)");
    app.add_flag("--json", global.json, "one JSON document on stdout");
    app.add_flag("-q,--quiet", global.quiet, "print verdicts only");
    app.add_flag("-v,--verbose", global.verbose, "debug log on stderr");
    app.add_flag("--no-progress", global.no_progress, "no progress line");
    std::vector<Command> commands = {register_remove(app), register_rollback(app), register_log(app),
                                     register_show(app), register_probe(app), register_verify(app),
                                     register_recover(app), register_why(app)};
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& help) {
        return app.exit(help);
    } catch (const CLI::CallForAllHelp& help) {
        return app.exit(help);
    } catch (const CLI::ParseError& error) {
        std::string message = error.what();
        print_error(global.json, 2, message + " (see venvtx --help)");
        return 2;
    }
    try {
        for (const auto& command : commands) {
            if (command.app->parsed()) {
                return command.run(global);
            }
        }
        return 2;
    } catch (const Error& error) {
        print_error(global.json, static_cast<int>(error.code()), error.what());
        return static_cast<int>(error.code());
    } catch (const std::exception& error) {
        print_error(global.json, 1, std::string("internal error: ") + error.what());
        return 1;
    }
}
