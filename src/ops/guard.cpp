// guard: write, remove and read back the hooks, under the store's locks.
#include "venvtx/ops/guard.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/core/file_text.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/ops/config.hpp"
#include "venvtx/ops/guard_hooks.hpp"
#include "venvtx/ops/history_session.hpp"

#include <unistd.h>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

std::string running_binary() {
    std::error_code error;
    stdfs::path exe = stdfs::read_symlink("/proc/self/exe", error);
    if (error) {
        throw Error(ExitCode::internal, "cannot read /proc/self/exe: " + error.message());
    }
    return exe.string();
}

// The hooks this venvtx writes for the venv; the store is passed on only where it is not the default.
std::vector<GuardHook> hooks_for(const Context& context) {
    std::string store = context.store_root == context.layout.root / ".venvtx" ? "" : context.store_root.string();
    std::string binary = running_binary();
    for (const std::string& text : {binary, context.layout.root.string(), store}) {
        if (text.find('\n') != std::string::npos) {
            throw usage_error("the guard cannot name a path with a newline in it: " + text);
        }
    }
    return {guard_pth(context.layout, binary, store), guard_uv(context.layout, binary, store)};
}

bool is_pth(const GuardHook& hook) { return hook.path.extension() == ".pth"; }

// Written whole beside the hook, then renamed over it: an interpreter starting meanwhile reads
// the old hook or the new one.
void write_hook(const GuardHook& hook) {
    Fs& fs = Fs::instance();
    stdfs::path temporary = hook.path.string() + ".venvtx-new";
    std::error_code error;
    if (stdfs::symlink_status(temporary, error).type() != stdfs::file_type::not_found) {
        fs.unlink(temporary); // left by a guard on that was killed
    }
    UniqueFd out = fs.create_file(temporary, hook.mode);
    fs.write(out.get(), hook.text.data(), hook.text.size(), temporary);
    fs.fsync(out.get(), temporary);
    fs.chmod(temporary, hook.mode); // not narrowed by the umask
    fs.take_parent_owner(temporary);
    fs.rename(temporary, hook.path);
    fs.fsync_dir(hook.path.parent_path());
}

// Each hook as found: the guard's (current when as this venvtx writes it), absent, or, for
// bin/uv, a uv of the venv's own, which the guard leaves alone.
GuardStatus read_status(const Context& context, const std::vector<GuardHook>& hooks) {
    GuardStatus status;
    bool current = true;
    for (const auto& hook : hooks) {
        auto text = read_file_text(hook.path);
        auto binary = text ? guard_hook_binary(*text) : std::nullopt;
        if (binary) {
            status.hooks.push_back(hook.path.string());
            status.binary = status.binary.empty() || is_pth(hook) ? *binary : status.binary;
            current = current && *text == hook.text;
        } else if (text && !is_pth(hook)) {
            status.uv_left = hook.path.string() + " is not the guard's (a uv installed in the venv?): left as it is";
        } else {
            current = false;
        }
        status.on = status.on || (binary && is_pth(hook));
    }
    status.current = status.on && current;
    status.binary_runs = !status.binary.empty() && ::access(status.binary.c_str(), X_OK) == 0;
    status.probe = saved_defaults(context).probe;
    return status;
}

} // namespace

GuardStatus guard_status(const Context& context) { return read_status(context, hooks_for(context)); }

GuardStatus guard_on(const Context& context) {
    HistorySession session(context, true, 10.0);
    auto hooks = hooks_for(context);
    bool changed = false;
    for (const auto& hook : hooks) {
        auto text = read_file_text(hook.path);
        bool ours = text && guard_hook_binary(*text);
        if ((!text || ours) && text != hook.text) {
            write_hook(hook); // a uv the venv has of its own is left alone
            changed = true;
        }
    }
    GuardStatus status = read_status(context, hooks);
    status.changed = changed;
    return status;
}

GuardStatus guard_off(const Context& context) {
    HistorySession session(context, false);
    auto hooks = hooks_for(context);
    bool changed = false;
    for (const auto& hook : hooks) {
        auto text = read_file_text(hook.path);
        if (text && guard_hook_binary(*text)) {
            Fs::instance().unlink(hook.path);
            Fs::instance().fsync_dir(hook.path.parent_path());
            changed = true;
        }
    }
    GuardStatus status = read_status(context, hooks);
    status.changed = changed;
    return status;
}

} // namespace venvtx
