// Dry runs of install and run: the installer's own report, read as package changes.
#include "venvtx/ops/command_plan.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/core/subprocess.hpp"
#include "venvtx/report/transaction_text.hpp"
#include "venvtx/venv/names.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

namespace venvtx {

namespace {

std::map<std::string, std::string> by_normalized_name(const std::map<std::string, std::string>& versions) {
    std::map<std::string, std::string> normalized;
    for (const auto& [name, version] : versions) {
        normalized[normalize_name(name)] = version;
    }
    return normalized;
}

bool is_uv(const std::vector<std::string>& argv) {
    return std::filesystem::path(argv.front()).filename() == "uv";
}

std::string last_line_of(const std::string& text) {
    std::istringstream lines(text);
    std::string line;
    std::string last;
    while (std::getline(lines, line)) {
        if (line.find_first_not_of(" \t\r") != std::string::npos) {
            last = line;
        }
    }
    return last;
}

// pip's --report: {"install": [{"metadata": {"name", "version"}}, ...]}.
std::map<std::string, std::string> pip_report_installs(const std::string& text) {
    nlohmann::json report = nlohmann::json::parse(text, nullptr, false);
    if (report.is_discarded() || !report.is_object() || !report.contains("install")) {
        throw Error(ExitCode::internal, "pip --dry-run --report printed no report we can read");
    }
    std::map<std::string, std::string> installs;
    for (const auto& item : report["install"]) {
        const auto& metadata = item.value("metadata", nlohmann::json::object());
        installs[metadata.value("name", std::string())] = metadata.value("version", std::string());
    }
    return installs;
}

// uv's --dry-run lines: " + name==version" (installed), " - name==version" (removed).
void read_uv_dry_run(const std::string& text, std::map<std::string, std::string>& installs,
                     std::vector<std::string>& removals) {
    static const std::regex k_line(R"(^\s*([+-])\s+([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+))");
    std::istringstream lines(text);
    std::string line;
    std::smatch match;
    while (std::getline(lines, line)) {
        if (std::regex_search(line, match, k_line)) {
            if (match[1] == "+") {
                installs[match[2]] = match[3];
            } else {
                removals.push_back(match[2]);
            }
        }
    }
}

} // namespace

std::vector<PackageChange> package_changes(const std::map<std::string, std::string>& before,
                                           const std::map<std::string, std::string>& after) {
    std::vector<PackageChange> changes;
    for (const auto& [name, version] : before) {
        auto now = after.find(name);
        if (now == after.end()) {
            changes.push_back({name, version, std::nullopt});
        } else if (now->second != version) {
            changes.push_back({name, version, now->second});
        }
    }
    for (const auto& [name, version] : after) {
        if (before.count(name) == 0) {
            changes.push_back({name, std::nullopt, version});
        }
    }
    return changes;
}

nlohmann::json command_plan_json(const std::string& kind, const std::vector<std::string>& argv,
                                 const std::optional<std::vector<PackageChange>>& packages) {
    nlohmann::json listed;
    if (packages) {
        listed = nlohmann::json::array();
        for (const auto& change : *packages) {
            listed.push_back({{"name", change.name},
                              {"before", change.before ? nlohmann::json(*change.before) : nlohmann::json()},
                              {"after", change.after ? nlohmann::json(*change.after) : nlohmann::json()}});
        }
    }
    return {{"kind", kind}, {"argv", argv}, {"packages", listed}};
}

void say_command_plan(const Output& out, const nlohmann::json& plan) {
    if (!plan["packages"].is_array()) {
        out.say("what it changes is known only once it runs");
        return;
    }
    if (plan["packages"].empty()) {
        out.say("it would change no distribution");
    }
    for (const auto& item : plan["packages"]) {
        PackageChange change{item["name"].get<std::string>(), std::nullopt, std::nullopt};
        if (item["before"].is_string()) {
            change.before = item["before"].get<std::string>();
        }
        if (item["after"].is_string()) {
            change.after = item["after"].get<std::string>();
        }
        out.say("  " + package_change_text(change));
    }
}

std::vector<PackageChange> installer_dry_run(const Context& context, const std::vector<std::string>& argv,
                                             const std::map<std::string, std::string>& installed) {
    bool uv = is_uv(argv);
    auto install = std::find(argv.begin(), argv.end(), "install");
    SubprocessSpec spec;
    spec.argv.assign(argv.begin(), install + 1);
    if (uv) {
        spec.argv.push_back("--dry-run");
    } else {
        spec.argv.insert(spec.argv.end(), {"--dry-run", "--report", "-", "--quiet"});
    }
    spec.argv.insert(spec.argv.end(), install + 1, argv.end());
    spec.env = activated_environment(context.layout);
    SubprocessResult result = run_subprocess(spec);
    if (result.exit_code != 0) {
        std::string detail = last_line_of(result.err);
        throw Error(ExitCode::usage, "installer_failed",
                    std::string(uv ? "uv" : "pip") + "'s dry run exited with status " +
                        std::to_string(result.exit_code) + (detail.empty() ? "" : ": " + detail) + "; nothing changed",
                    {{"exit_code", result.exit_code}});
    }
    std::map<std::string, std::string> installs;
    std::vector<std::string> removals;
    if (uv) {
        read_uv_dry_run(result.err + "\n" + result.out, installs, removals);
    } else {
        installs = pip_report_installs(result.out);
    }
    std::map<std::string, std::string> before = by_normalized_name(installed);
    std::map<std::string, std::string> after = before;
    for (const auto& name : removals) {
        after.erase(normalize_name(name));
    }
    for (const auto& [name, version] : installs) {
        after[normalize_name(name)] = version;
    }
    return package_changes(before, after);
}

namespace {

bool says_yes(const std::vector<std::string>& argv) {
    return std::any_of(argv.begin(), argv.end(), [](const std::string& arg) {
        return arg == "-y" || arg == "--yes" || (arg.size() > 1 && arg[0] == '-' && arg[1] != '-' &&
                                                 arg.find('y') != std::string::npos);
    });
}

} // namespace

std::string prompt_hint(const std::vector<std::string>& argv) {
    // pip asks only in `uninstall`, which refuse_prompting_command() stops before it runs.
    static const std::set<std::string> k_asking = {"conda", "mamba", "micromamba", "apt", "apt-get"};
    std::string program = std::filesystem::path(argv.front()).filename().string();
    if (k_asking.count(program) == 0 || says_yes(argv)) {
        return "";
    }
    return " (under venvtx its stdin is /dev/null: a question it asked got no answer; pass -y)";
}

void refuse_prompting_command(const std::vector<std::string>& argv) {
    auto program = std::filesystem::path(argv.front()).filename().string();
    bool pip = program.rfind("pip", 0) == 0;
    auto module = std::find(argv.begin(), argv.end(), "-m");
    pip = pip || (program.rfind("python", 0) == 0 && module != argv.end() && module + 1 != argv.end() &&
                  *(module + 1) == "pip");
    bool uninstall = std::find(argv.begin(), argv.end(), "uninstall") != argv.end();
    if (pip && uninstall && !says_yes(argv)) {
        throw Error(ExitCode::usage, "prompt",
                    "pip uninstall asks before it removes anything, and under venvtx its stdin is /dev/null: "
                    "pass -y (venvtx run -- pip uninstall -y ...); nothing was changed",
                    nlohmann::json::object());
    }
}

} // namespace venvtx
