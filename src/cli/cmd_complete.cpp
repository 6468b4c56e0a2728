// venvtx __complete dists|entries: the dynamic words a completion script asks for (hidden).
#include "command.hpp"

#include "venvtx/store/database.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/venv/names.hpp"

#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

namespace venvtx::cli {

namespace {

// Normalized names from the dist-info directory names alone: no file is read, so a venv of
// thousands of distributions answers at once.
void print_distributions(const Context& context) {
    std::set<std::string> names;
    std::error_code ec;
    for (const auto& site : context.layout.site_packages) {
        for (const auto& entry : std::filesystem::directory_iterator(site, ec)) {
            std::string leaf = entry.path().filename().string();
            for (const std::string suffix : {".dist-info", ".egg-info"}) {
                if (leaf.size() > suffix.size() && leaf.ends_with(suffix)) {
                    names.insert(normalize_name(leaf.substr(0, leaf.find('-'))));
                }
            }
        }
    }
    for (const auto& name : names) {
        std::cout << name << "\n";
    }
}

// The newest entries, "ID<TAB>kind state" (fish and zsh show what follows the tab).
void print_entries(const Context& context) {
    if (!Store::exists(context.store_root)) {
        return;
    }
    Database db(context.store_root / "index.sqlite");
    Statement query = db.prepare("SELECT id, kind, state FROM transactions ORDER BY id DESC LIMIT 40");
    while (query.step()) {
        std::cout << query.integer(0) << "\t" << query.text(1) << " " << query.text(2) << "\n";
    }
}

} // namespace

Command register_complete(CLI::App& parent) {
    auto what = std::make_shared<std::string>();
    CLI::App* app = parent.add_subcommand("__complete", "words for the completion scripts");
    app->group(""); // hidden from --help and the man page
    app->add_option("what", *what, "dists or entries")->required();
    return {app, [what](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                if (*what == "dists") {
                    print_distributions(context);
                } else if (*what == "entries") {
                    print_entries(context);
                } else {
                    throw usage_error("__complete takes dists or entries, not '" + *what + "'");
                }
                return 0;
            }};
}

} // namespace venvtx::cli
