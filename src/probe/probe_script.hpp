// The Python program the probe runs; the user's code arrives in VENVTX_PROBE_CODE (JSON list).
#pragma once

namespace venvtx {

inline constexpr const char* k_probe_script = R"venvtx_py(
import json, os, sys, traceback

def first_error_line(exc):
    lines = traceback.format_exception_only(type(exc), exc)
    text = "".join(lines).strip().splitlines()
    return text[-1] if text else type(exc).__name__

report = {"passed": True, "error": None, "gpus": None}
status = 0  # what the interpreter would have exited with, had it run the code itself
try:
    for index, code in enumerate(json.loads(os.environ["VENVTX_PROBE_CODE"])):
        exec(compile(code, "<probe %d>" % (index + 1), "exec"), {"__name__": "__main__"})
except SystemExit as exc:
    if exc.code not in (None, 0):
        status = exc.code if isinstance(exc.code, int) else 1
        report["passed"] = False
        report["error"] = "SystemExit: %s" % (exc.code,)
except BaseException as exc:
    traceback.print_exc()
    status = 1
    report["passed"] = False
    report["error"] = first_error_line(exc)

torch = sys.modules.get("torch")
if report["passed"] and torch is not None and os.environ.get("VENVTX_PROBE_GPUS") != "none":
    gpus = []
    try:
        count = torch.cuda.device_count()
    except BaseException as exc:
        count = 0
        report["passed"] = False
        report["error"] = "torch.cuda.device_count() failed: " + first_error_line(exc)
    for i in range(count):
        gpu = {"index": i, "name": None, "ok": False, "error": None}
        try:
            gpu["name"] = str(torch.cuda.get_device_name(i))
            t = torch.ones(16, device="cuda:%d" % i)
            value = (t + t).sum().item()
            torch.cuda.synchronize(i)
            if value != 32:
                raise RuntimeError("wrong result %r from (ones + ones).sum()" % (value,))
            gpu["ok"] = True
        except BaseException as exc:
            gpu["error"] = first_error_line(exc)
        gpus.append(gpu)
    report["gpus"] = gpus

# Every shared object the process mapped under the venv: libraries preloaded with ctypes show
# here and in no ELF header.
root = os.path.realpath(os.environ.get("VIRTUAL_ENV", sys.prefix)) + os.sep
mapped = set()
try:
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith(root) and ".so" in parts[5]:
                mapped.add(parts[5].strip()[len(root):])
except OSError:
    pass
report["mapped"] = sorted(mapped)

with os.fdopen(3, "w") as channel:
    json.dump(report, channel)
sys.exit(status)
)venvtx_py";

} // namespace venvtx
