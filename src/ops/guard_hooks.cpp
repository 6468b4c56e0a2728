// The guard's hook files, as text: a .pth line (Python) and a uv wrapper (POSIX sh).
#include "venvtx/ops/guard_hooks.hpp"

#include <nlohmann/json.hpp>

namespace venvtx {

namespace {

constexpr const char* k_marker = "# venvtx guard; venvtx: ";

// What the .pth line runs in a fresh namespace, at every start of the venv's interpreter: it
// returns at once unless that start runs pip to change this venv.
constexpr const char* k_pth_code = R"py(
import os
import sys

# pip's general options that take a value (the command is the first word after them)
VALUED = {"--python", "--log", "--proxy", "--retries", "--timeout", "--exists-action", "--trusted-host",
          "--cert", "--client-cert", "--cache-dir", "--use-feature", "--use-deprecated", "--keyring-provider",
          "--log-file", "--local-log", "--resume-retries"}
# install/uninstall options that aim pip away from this venv, or make it change nothing
ELSEWHERE = {"--target", "-t", "--prefix", "--root", "--user", "--dry-run", "-h", "--help"}


def pip_launch(argv):
    """How this interpreter runs pip (a pip script, -m pip, pip's runner) and pip's arguments, else None."""
    i = 1
    while i < len(argv):
        arg, i = argv[i], i + 1
        if arg == "-" or not arg.startswith("-"):
            name = os.path.basename(arg)
            pip = name in ("pip", "pip3", "__pip-runner__.py") or (name.startswith("pip3.") and name[5:].isdigit())
            if not pip:
                return None
            script = os.path.abspath(arg)
            return ([sys.executable, script] if name.endswith(".py") else [script]), argv[i:]
        if arg.startswith("--"):
            i += arg == "--check-hash-based-pycs"
            continue
        for k, flag in enumerate(arg[1:]):
            if flag in "cmXW":
                value = arg[k + 2:]
                if not value:
                    value, i = (argv[i] if i < len(argv) else ""), i + 1
                if flag == "m":
                    return ([sys.executable, "-m", "pip"], argv[i:]) if value in ("pip", "pip.__main__") else None
                if flag == "c":
                    return None
                break
    return None


def ours(python):
    """Whether pip's --python names this interpreter or this venv (as pip's runner repeats it)."""
    named = os.path.realpath(python)
    return named in (os.path.realpath(sys.executable), os.path.realpath(sys.prefix))


def command_of(args):
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i].split("=")[0] == "--python":
            python = args[i].split("=", 1)[1] if "=" in args[i] else (args[i + 1] if i + 1 < len(args) else "")
            if not ours(python):
                return None, i  # another interpreter's pip: that one's guard, if any, decides
        i += 1 + (args[i] in VALUED)
    return (args[i], i) if i < len(args) else (None, i)


def guard(venvtx, venv, store):
    if os.environ.get("VENVTX_GUARD") == "0":
        return
    argv = getattr(sys, "orig_argv", None)
    if argv is None:  # before Python 3.10: sys.argv does not say which module -m runs
        if not sys.argv or sys.argv[0] in ("", "-c", "-m"):
            return
        argv = [sys.executable] + sys.argv
    launch, args = pip_launch(argv) or (None, [])
    command, at = command_of(args)
    if command not in ("install", "uninstall") or any(a.split("=")[0] in ELSEWHERE for a in args):
        return
    said = "venvtx guard: pip %s in %s runs as a venvtx transaction (VENVTX_GUARD=0 bypasses it)\n" % (command, venv)
    if command == "uninstall" and not any(a == "--yes" or (a[:1] == "-" and a[1:2] != "-" and "y" in a) for a in args[at:]):
        if sys.stdin.isatty():
            sys.stderr.write(said + "Proceed (Y/n)? ")
            said = ""
            if sys.stdin.readline().strip().lower() not in ("", "y", "yes"):
                os._exit(0)
            args = args + ["--yes"]
    run = [venvtx, "run"] + (["--store", store] if store else []) + ["--venv", venv, "--"] + launch
    if not os.access(venvtx, os.X_OK):
        cannot_run(venvtx, "gone")
    sys.stderr.write(said)
    sys.stdout.flush()
    try:
        os.execv(venvtx, run + list(args))
    except OSError as error:
        cannot_run(venvtx, error.strerror)


def cannot_run(venvtx, why):
    sys.stderr.write("venvtx guard: cannot run %s (%s): `VENVTX_GUARD=0 pip ...` runs pip unguarded once, "
                     "`venvtx guard off` ends the guard\n" % (venvtx, why))
    os._exit(1)
)py";

constexpr const char* k_uv_script = R"sh(#!/bin/sh
# venvtx guard: `uv pip install|uninstall|sync` aimed at this venv (VIRTUAL_ENV) runs as a
# venvtx transaction; anything else runs the real uv, the next one on PATH. VENVTX_GUARD=0
# bypasses it. `venvtx guard off` removes this file.
venvtx=@VENVTX@
venv=@VENV@
store=@STORE@
self="$venv/bin/uv"
real=
IFS=:
for dir in $PATH; do
    if [ -x "$dir/uv" ] && [ ! -d "$dir/uv" ] && ! [ "$dir/uv" -ef "$self" ]; then
        real="$dir/uv"
        break
    fi
done
unset IFS
if [ -z "$real" ]; then
    echo "uv: not found on PATH (besides venvtx's guard in $venv/bin)" >&2
    exit 127
fi
routed=
if [ "${VENVTX_GUARD:-1}" != 0 ] && [ "$1" = pip ] && [ -z "${UV_PYTHON:-}${UV_SYSTEM_PYTHON:-}" ] &&
    [ -n "${VIRTUAL_ENV:-}" ] && [ "$VIRTUAL_ENV" -ef "$venv" ]; then
    case "$2" in install|uninstall|sync) routed=1 ;; esac
    for arg in "$@"; do
        case "$arg" in
            -p|-p*|--python|--python=*|--system|--target|--target=*|--prefix|--prefix=*|--dry-run|-h|--help) routed= ;;
        esac
    done
fi
if [ -z "$routed" ]; then
    exec "$real" "$@"
fi
echo "venvtx guard: uv pip $2 in $venv runs as a venvtx transaction (VENVTX_GUARD=0 bypasses it)" >&2
if [ -n "$store" ]; then
    exec "$venvtx" run --store "$store" --venv "$venv" -- "$real" "$@"
fi
exec "$venvtx" run --venv "$venv" -- "$real" "$@"
)sh";

std::string python_string(const std::string& text) {
    return nlohmann::json(text).dump(); // a JSON string is a Python string literal
}

std::string shell_word(const std::string& text) {
    std::string quoted = "'";
    for (char c : text) {
        quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return quoted + "'";
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    return text;
}

} // namespace

GuardHook guard_pth(const VenvLayout& layout, const std::string& venvtx, const std::string& store) {
    std::string call = "guard(" + python_string(venvtx) + ", " + python_string(layout.root.string()) + ", " +
                       python_string(store) + ")\n";
    std::string text = k_marker + venvtx + "\n" + "import sys; exec(" + python_string(k_pth_code + call) +
                       ", {\"__name__\": \"venvtx_guard\"})\n";
    return {layout.site_packages.front() / "venvtx-guard.pth", text, 0644};
}

GuardHook guard_uv(const VenvLayout& layout, const std::string& venvtx, const std::string& store) {
    std::string text = replaced(k_uv_script, "#!/bin/sh\n", std::string("#!/bin/sh\n") + k_marker + venvtx + "\n");
    text = replaced(text, "@VENVTX@", shell_word(venvtx));
    text = replaced(text, "@VENV@", shell_word(layout.root.string()));
    text = replaced(text, "@STORE@", shell_word(store));
    return {layout.scripts / "uv", text, 0755};
}

std::optional<std::string> guard_hook_binary(const std::string& text) {
    std::string::size_type at = text.find(k_marker);
    if (at == std::string::npos || at > 10) {
        return std::nullopt;
    }
    at += std::string(k_marker).size();
    return text.substr(at, text.find('\n', at) - at);
}

} // namespace venvtx
