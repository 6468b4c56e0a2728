// check_probe_syntax: compile() of each probe line in the venv's interpreter, isolated (-I -S).
#include "venvtx/probe/probe_syntax.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/core/subprocess.hpp"

namespace venvtx {

namespace {

constexpr const char* k_compile = R"py(import sys
for number, code in enumerate(sys.argv[1:], 1):
    try:
        compile(code, "<probe>", "exec")
    except (SyntaxError, ValueError) as error:
        where = " (line %d)" % error.lineno if getattr(error, "lineno", None) else ""
        print("probe %d: %s: %s%s" % (number, type(error).__name__, getattr(error, "msg", error), where))
        sys.exit(65)
)py";

} // namespace

void check_probe_syntax(const VenvLayout& layout, const std::vector<std::string>& code) {
    if (code.empty()) {
        return;
    }
    SubprocessSpec spec;
    spec.argv = {layout.python.string(), "-I", "-S", "-c", k_compile};
    spec.argv.insert(spec.argv.end(), code.begin(), code.end());
    spec.timeout = std::chrono::milliseconds(30000);
    SubprocessResult result = run_subprocess(spec);
    if (result.exit_code == 65) {
        std::string why = result.out.substr(0, result.out.find('\n'));
        throw usage_error("the probe is not valid Python: " + why + "; nothing was changed");
    }
}

} // namespace venvtx
