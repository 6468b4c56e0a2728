// Unit tests for run_subprocess: capture, exit codes, environment, timeouts, the fd-3 report pipe.
#include "venvtx/core/subprocess.hpp"

#include <doctest/doctest.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <fstream>
#include <string>
#include <thread>
#include <unistd.h>

using venvtx::run_subprocess;
using venvtx::SubprocessSpec;

namespace {

SubprocessSpec shell(const std::string& script) {
    SubprocessSpec spec;
    spec.argv = {"sh", "-c", script};
    return spec;
}

// True once `pid` no longer runs (gone, or a zombie nobody has reaped yet), waiting up to 2s.
bool process_gone(pid_t pid) {
    for (int i = 0; i < 200; ++i) {
        if (::kill(pid, 0) != 0 && errno == ESRCH) {
            return true;
        }
        std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
        std::string line;
        std::getline(stat, line);
        size_t close = line.rfind(')');
        if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z') {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

} // namespace

TEST_SUITE("run_subprocess") {
    TEST_CASE("captures stdout, stderr and the exit code") {
        auto result = run_subprocess(shell("printf 'to out'; printf 'to err' >&2; exit 7"));
        CHECK(result.out == "to out");
        CHECK(result.err == "to err");
        CHECK(result.exit_code == 7);
        CHECK_FALSE(result.timed_out);
        CHECK(result.report.empty());
    }

    TEST_CASE("large output is captured whole") {
        auto result = run_subprocess(shell("head -c 300000 /dev/zero | tr '\\0' x"));
        CHECK(result.exit_code == 0);
        CHECK(result.out.size() == 300000);
        CHECK(result.out.find_first_not_of('x') == std::string::npos);
    }

    TEST_CASE("a signal death is 128 + signal") {
        auto result = run_subprocess(shell("kill -TERM $$"));
        CHECK(result.exit_code == 128 + SIGTERM);
    }

    TEST_CASE("environment overrides set and unset variables") {
        ::setenv("VENVTX_UNIT_DROP", "present", 1);
        auto spec = shell("echo \"$VENVTX_UNIT_SET:${VENVTX_UNIT_DROP-unset}\"");
        spec.env["VENVTX_UNIT_SET"] = "value";
        spec.env["VENVTX_UNIT_DROP"] = std::nullopt;
        auto result = run_subprocess(spec);
        ::unsetenv("VENVTX_UNIT_DROP");
        CHECK(result.out == "value:unset\n");
    }

    TEST_CASE("stdin is empty") {
        auto result = run_subprocess(shell("cat; echo done"));
        CHECK(result.out == "done\n");
    }

    TEST_CASE("a timeout kills the whole process group") {
        auto spec = shell("sleep 30 & echo $!; sleep 30");
        spec.timeout = std::chrono::milliseconds(300);
        auto started = std::chrono::steady_clock::now();
        auto result = run_subprocess(spec);
        double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        CHECK(result.timed_out);
        CHECK(result.exit_code == 128 + SIGKILL);
        CHECK(elapsed < 2.0);
        CHECK(result.duration_s >= 0.3);
        CHECK(result.duration_s < 2.0);
        pid_t grandchild = static_cast<pid_t>(std::stol(result.out));
        REQUIRE(grandchild > 1);
        CHECK(process_gone(grandchild));
    }

    TEST_CASE("no timeout when the child is quick") {
        auto spec = shell("echo quick");
        spec.timeout = std::chrono::milliseconds(5000);
        auto result = run_subprocess(spec);
        CHECK_FALSE(result.timed_out);
        CHECK(result.out == "quick\n");
        CHECK(result.exit_code == 0);
    }

    TEST_CASE("the report pipe on fd 3") {
        auto spec = shell("echo hi >&3; echo out");
        spec.report_pipe = true;
        auto result = run_subprocess(spec);
        CHECK(result.report == "hi\n");
        CHECK(result.out == "out\n");
        CHECK(result.exit_code == 0);

        auto without = run_subprocess(shell("echo hi >&3"));
        CHECK(without.report.empty());
        CHECK(without.exit_code != 0);
    }
}
