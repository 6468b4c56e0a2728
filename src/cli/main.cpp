// venvtx: parse the command line, run one command, map errors to the contract's exit codes.
#include "command.hpp"
#include "help_format.hpp"
#include "parse_errors.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/core/output.hpp"
#include "venvtx/core/subprocess.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <iostream>
#include <optional>

namespace {

void print_error(bool json, const venvtx::Error& error) {
    if (json) {
        venvtx::Output(venvtx::OutputOptions{true}).document(
            {{"error",
              {{"kind", error.kind()}, {"exit_code", static_cast<int>(error.code())},
               {"message", error.what()}, {"details", error.details()}}}});
    } else {
        std::cerr << "venvtx: " << error.what() << std::endl;
    }
}

} // namespace

int main(int argc, char** argv) {
    using namespace venvtx;
    using namespace venvtx::cli;
    forward_interrupts_to_children();
    // What venvtx starts (an installer, a run's command, a probe) is already a transaction: the
    // guard's hooks let it through (ops/guard.hpp).
    ::setenv("VENVTX_GUARD", "0", 1);
    GlobalOptions global;
    global.argv.assign(argv, argv + argc);
    global.argv[0] = "venvtx";
    CLI::App app("venvtx: every change to a Python venv as a transaction: probe it, and restore the "
                 "exact prior bytes when the probe fails.",
                 "venvtx");
    app.formatter(std::make_shared<HelpFormatter>());
    app.require_subcommand(1);
    app.fallthrough(); // global options may also follow the subcommand (inherited by each)
    app.set_version_flag("--version", VENVTX_VERSION, "print the version and exit");
    app.add_option("--venv", global.venv, "the venv (default: $VIRTUAL_ENV, then .venv here or in a directory above)");
    app.add_option("--store", global.store, "where history and objects live (default: $VENVTX_STORE, then <venv>/.venvtx)");
    app.add_flag("--json", global.json, "one JSON document on stdout");
    app.add_flag("-q,--quiet", global.quiet, "print verdicts only");
    app.add_flag("-v,--verbose", global.verbose, "debug log on stderr");
    app.add_flag("--no-progress", global.no_progress, "no progress line");
    std::vector<Command> commands = {register_remove(app), register_rollback(app), register_log(app),
                                     register_show(app), register_probe(app), register_verify(app),
                                     register_recover(app), register_why(app), register_gc(app), register_install(app),
                                     register_run(app), register_sync(app), register_stamp(app), register_watch(app), register_guard(app), register_status(app),
                                     register_diff(app), register_freeze(app), register_exec(app), register_config(app), register_completion(app), register_help(app),
                                     register_complete(app)};
    // Everything after the first "--" belongs to the installer or the command `run` starts.
    std::vector<std::string> ours(argv + 1, argv + argc);
    auto separator = std::find(ours.begin(), ours.end(), "--");
    if (separator != ours.end()) {
        global.passthrough.assign(separator + 1, ours.end());
        ours.erase(separator, ours.end());
    }
    const std::vector<std::string> typed = ours; // parse() consumes its argument
    std::reverse(ours.begin(), ours.end()); // CLI11 takes the arguments reversed
    try {
        app.parse(ours);
    } catch (const CLI::CallForVersion&) {
        bool json = std::find(typed.begin(), typed.end(), "--json") != typed.end();
        if (json) {
            Output(OutputOptions{true}).document({{"version", VENVTX_VERSION}});
        } else {
            std::cout << "venvtx " VENVTX_VERSION << std::endl;
        }
        return 0;
    } catch (const CLI::CallForHelp& help) {
        return app.exit(help);
    } catch (const CLI::CallForAllHelp& help) {
        return app.exit(help);
    } catch (const CLI::ParseError& error) {
        print_error(global.json || std::find(typed.begin(), typed.end(), "--json") != typed.end(),
                    usage_error(explain_parse_error(app, typed, error)));
        return 2;
    }
    try {
        for (const auto& command : commands) {
            if (command.app->parsed()) {
                std::string name = command.app->get_name();
                if (!global.passthrough.empty() && name != "install" && name != "run" && name != "exec" && name != "sync") {
                    throw usage_error("`venvtx " + name + "` takes no arguments after --");
                }
                return command.run(global);
            }
        }
        return 2;
    } catch (const Error& error) {
        print_error(global.json, error);
        return static_cast<int>(error.code());
    } catch (const std::exception& error) {
        print_error(global.json, Error(ExitCode::internal, std::string("internal error: ") + error.what()));
        return 1;
    }
}
