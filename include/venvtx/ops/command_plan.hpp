// What `install` and `run` would change, said before they run: the packages before -> after,
// from the installer's own dry run (pip --dry-run --report, uv --dry-run) or from the versions a
// private view ended with. Also the prompt a command under venvtx cannot answer.
#pragma once

#include "venvtx/store/history.hpp"
#include "venvtx/txn/context.hpp"

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace venvtx {

// Installed versions before and after, as changes (removed, upgraded or downgraded, added).
std::vector<PackageChange> package_changes(const std::map<std::string, std::string>& before,
                                           const std::map<std::string, std::string>& after);

// The plan document of a dry run: {"kind", "argv", "packages": [{name, before, after}] or null
// when unknown}.
nlohmann::json command_plan_json(const std::string& kind, const std::vector<std::string>& argv,
                                 const std::optional<std::vector<PackageChange>>& packages);

// Says the plan's packages, one line each ("  torch 2.11.0 → 2.12.0"), or that they are unknown.
void say_command_plan(const Output& out, const nlohmann::json& plan);

// Runs the installer command `argv` (as installer_command() builds it) as its own dry run and
// returns the changes it would make to `installed`. A failing installer is a usage Error
// carrying its last line.
std::vector<PackageChange> installer_dry_run(const Context& context, const std::vector<std::string>& argv,
                                             const std::map<std::string, std::string>& installed);

// A usage Error (kind "prompt") for a command that would stop at a question it cannot be asked
// (its stdin is /dev/null): `pip uninstall` without -y. Nothing runs.
void refuse_prompting_command(const std::vector<std::string>& argv);

// For a failed installer that asks before it acts (conda, mamba, apt) run without -y:
// " (under venvtx its stdin is /dev/null: ... pass -y)"; else "".
std::string prompt_hint(const std::vector<std::string>& argv);

} // namespace venvtx
