// MappingEvents: a real child (python3) maps real files for execution, enough times that each
// ring buffer wraps; every record is read whole and names a real file.
#include "venvtx/core/mapping_events.hpp"

#include "temp_dir.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

using venvtx::MappingEvents;
namespace stdfs = std::filesystem;

namespace {

constexpr int k_no_exec_mapping = 77; // the child's exit status where PROT_EXEC is refused

std::string indented(const std::string& code) {
    std::string out = "    ";
    for (char c : code) {
        out += c;
        if (c == '\n') {
            out += "    ";
        }
    }
    return out + "\n";
}

// Forks python3 running `code` once followed; returns what was recorded, or nothing where the
// kernel refuses perf events here.
std::optional<std::set<std::string>> mapped_by(const std::string& code) {
    int go[2];
    REQUIRE(::pipe(go) == 0);
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(go[1]);
        char byte = 0;
        (void)!::read(go[0], &byte, 1);
        std::string guarded = "try:\n" + indented(code) + "except PermissionError:\n    raise SystemExit(" +
                              std::to_string(k_no_exec_mapping) + ")\n";
        ::execlp("python3", "python3", "-S", "-c", guarded.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ::close(go[0]);
    auto events = MappingEvents::follow(pid);
    (void)!::write(go[1], "g", 1);
    ::close(go[1]);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    if (WEXITSTATUS(status) == k_no_exec_mapping) {
        MESSAGE("files here may not be mapped for execution (a noexec mount): nothing to check");
        return std::nullopt;
    }
    REQUIRE(WEXITSTATUS(status) == 0);
    if (!events) {
        MESSAGE("perf events are refused here: nothing to check");
        return std::nullopt;
    }
    return events->finish();
}

} // namespace

TEST_SUITE("MappingEvents") {
    TEST_CASE("every executable mapping of a child is recorded, across many wraps of the buffers") {
        venvtx::test::TempDir dir;
        // A long name: a record cut at the end of its ring is mostly name, so a misread shows.
        std::string many = (dir.path() / (std::string(150, 'm') + ".so")).string();
        stdfs::copy_file("/usr/bin/env", many);
        std::string last = stdfs::canonical("/usr/bin/true").string();
        // ~4,000 records of ~200 bytes: 800 KiB through 64 KiB rings, paced so none is dropped
        std::string code = "import mmap, time\n"
                           "f = open('" + many + "', 'rb')\n"
                           "for i in range(4000):\n"
                           "    mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ | mmap.PROT_EXEC).close()\n"
                           "    if i % 50 == 0: time.sleep(0.005)\n"
                           "g = open('" + last + "', 'rb')\n"
                           "mmap.mmap(g.fileno(), 0, prot=mmap.PROT_READ | mmap.PROT_EXEC)\n";
        auto mapped = mapped_by(code);
        if (!mapped) {
            return;
        }
        CHECK(mapped->count(many) == 1);
        CHECK(mapped->count(last) == 1);
        for (const auto& file : *mapped) {
            CHECK_MESSAGE(stdfs::is_regular_file(file), file); // a record misread across a wrap names no file
        }
    }

    TEST_CASE("a child's mapping is recorded though it then executes another program") {
        std::string library = stdfs::canonical("/usr/bin/env").string();
        auto mapped = mapped_by("import mmap, os\n"
                                "f = open('" + library + "', 'rb')\n"
                                "mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ | mmap.PROT_EXEC)\n"
                                "os.execv('/bin/true', ['true'])\n");
        if (!mapped) {
            return;
        }
        CHECK(mapped->count(library) == 1);
        CHECK(mapped->count(stdfs::canonical("/bin/true").string()) == 1);
    }
}
