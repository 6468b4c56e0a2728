// venvtx guard [on|off|status]
#include "command.hpp"

#include "venvtx/ops/guard.hpp"

#include <memory>

namespace venvtx::cli {

namespace {

nlohmann::json guard_json(const Context& context, const GuardStatus& status) {
    return {{"venv", context.layout.root.string()}, {"on", status.on},          {"current", status.current},
            {"venvtx", status.on ? nlohmann::json(status.binary) : nlohmann::json()},
            {"venvtx_runs", status.binary_runs}, {"hooks", status.hooks},
            {"uv_left", status.uv_left.empty() ? nlohmann::json() : nlohmann::json(status.uv_left)},
            {"probe", status.probe}};
}

void say_guard(const Output& out, const Context& context, const std::string& action, const GuardStatus& status) {
    const std::string venv = context.layout.root.string();
    if (!status.on) {
        out.verdict(action == "off" && status.changed ? "guard off for " + venv + ": its hooks removed"
                                                      : "guard: off for " + venv);
        return;
    }
    std::string verdict = action == "on" && status.changed ? "guard on for " + venv
                          : action == "on"                 ? "guard already on for " + venv
                                                           : "guard: on for " + venv;
    out.verdict(verdict + ": plain pip and uv pip changes run as venvtx transactions");
    out.say(status.probe.empty() ? "  no saved probe: they are captured and undoable, not probed "
                                   "(`venvtx config probe 'import torch'`)"
                                 : "  probe: " + status.probe.front() +
                                       (status.probe.size() > 1 ? " (and more lines)" : ""));
    if (!status.binary_runs) {
        out.say("  its hooks run " + status.binary + ", which is gone: `venvtx guard on` again with this venvtx");
    } else if (!status.current) {
        out.say("  its hooks run " + status.binary + ": `venvtx guard on` rewrites them for this venvtx");
    }
    if (!status.uv_left.empty()) {
        out.say("  " + status.uv_left);
    }
    out.say("  bypass once: VENVTX_GUARD=0 pip ...; end it: venvtx guard off");
}

} // namespace

Command register_guard(CLI::App& parent) {
    auto action = std::make_shared<std::string>("status");
    CLI::App* app = parent.add_subcommand(
        "guard", "make plain `pip install|uninstall` and `uv pip install|uninstall|sync` in this venv run as venvtx "
                 "transactions (on), stop (off), or say which (status, the default)");
    app->add_option("action", *action, "on, off or status")->check(CLI::IsMember({"on", "off", "status"}));
    return {app, [action](const GlobalOptions& global) {
                Output out = make_output(global);
                Context context = make_context(global, out);
                GuardStatus status = *action == "on"    ? guard_on(context)
                                     : *action == "off" ? guard_off(context)
                                                        : guard_status(context);
                if (out.json()) {
                    out.document({{"guard", guard_json(context, status)}, {"changed", status.changed}});
                } else {
                    say_guard(out, context, *action, status);
                }
                return 0;
            }};
}

} // namespace venvtx::cli
