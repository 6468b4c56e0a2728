// scan_live and changes_since: every change found, whatever name it came through; unchanged
// directories are not read again, and a change in the scan's own clock tick is not missed.
#include "venvtx/capture/live_scan.hpp"

#include "temp_dir.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace stdfs = std::filesystem;
using venvtx::test::write_file;

namespace {

struct Venv {
    venvtx::test::TempDir tmp;
    venvtx::VenvLayout layout;
    stdfs::path store;

    Venv() {
        layout.root = tmp.path() / "venv";
        store = layout.root / ".venvtx";
        write_file(layout.root / "pyvenv.cfg", "home = /usr/bin\n");
        write_file(layout.root / ".lock", "");
        write_file(store / "index.db", "x");
        write_file(site() / "torch" / "__init__.py", "import torch._C\n");
        write_file(site() / "torch" / "lib" / "libtorch.so", "ELF");
        write_file(site() / "torch-2.11.0.dist-info" / "RECORD", "torch/__init__.py,,\n");
        write_file(site() / "six.py", "six\n");
    }
    stdfs::path site() const { return layout.root / "lib" / "python3.12" / "site-packages"; }
    venvtx::LiveScan scan() const { return venvtx::scan_live(layout, store); }
    venvtx::LiveCheck since(const venvtx::LiveScan& before) const {
        return venvtx::changes_since(before, layout, store);
    }
};

std::vector<std::string> listed(const venvtx::LiveCheck& check) {
    std::vector<std::string> lines;
    for (const auto& change : check.changes) {
        lines.push_back(std::string(change.change) + " " + change.path);
    }
    return lines;
}

const std::string k_site = "lib/python3.12/site-packages/";

// Past the filesystems' clock tick, so that what changes next gets another ctime.
void next_tick() { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }

} // namespace

TEST_SUITE("live_scan") {
    TEST_CASE("a scan holds every path but venvtx's own; nothing changed, nothing found") {
        Venv venv;
        venvtx::LiveScan before = venv.scan();
        CHECK(before.paths == 11); // 13 paths written, but .lock and the store's own (2)
        venvtx::LiveCheck check = venv.since(before);
        CHECK(listed(check).empty());
        CHECK(check.paths == before.paths);
    }

    TEST_CASE("added, removed and replaced paths, with everything below them") {
        Venv venv;
        venvtx::LiveScan before = venv.scan();
        next_tick();
        write_file(venv.site() / "flash_attn" / "ops" / "kernel.py", "k\n");
        stdfs::remove(venv.site() / "six.py");
        stdfs::remove_all(venv.site() / "torch" / "lib");
        write_file(venv.site() / "torch" / "lib", "now a file\n");
        stdfs::remove_all(venv.site() / "torch-2.11.0.dist-info");
        write_file(venv.layout.root / ".lock", "held");
        write_file(venv.store / "objects", "new");
        std::vector<std::string> expected{
            "added " + k_site + "flash_attn",
            "added " + k_site + "flash_attn/ops",
            "added " + k_site + "flash_attn/ops/kernel.py",
            "removed " + k_site + "six.py",
            "modified " + k_site + "torch/lib",
            "removed " + k_site + "torch/lib/libtorch.so",
            "removed " + k_site + "torch-2.11.0.dist-info",
            "removed " + k_site + "torch-2.11.0.dist-info/RECORD",
        };
        std::sort(expected.begin(), expected.end(), [](const std::string& a, const std::string& b) {
            return a.substr(a.find(' ') + 1) < b.substr(b.find(' ') + 1);
        });
        CHECK(listed(venv.since(before)) == expected);
    }

    TEST_CASE("a file that became a directory is modified, and what it holds added") {
        Venv venv;
        venvtx::LiveScan before = venv.scan();
        stdfs::remove(venv.site() / "six.py");
        write_file(venv.site() / "six.py" / "__init__.py", "six\n");
        CHECK(listed(venv.since(before)) == std::vector<std::string>{"modified " + k_site + "six.py",
                                                                     "added " + k_site + "six.py/__init__.py"});
    }

    TEST_CASE("a write through a hard link from outside is found, mtime and size kept; a new link alone is not") {
        Venv venv;
        stdfs::path file = venv.site() / "torch" / "__init__.py";
        stdfs::create_hard_link(file, venv.tmp.path() / "outside-name");
        struct stat was {};
        REQUIRE(::stat(file.c_str(), &was) == 0);
        venvtx::LiveScan before = venv.scan();
        next_tick();
        stdfs::create_hard_link(file, venv.tmp.path() / "uv-cache-name"); // ctime and link count move
        CHECK(listed(venv.since(before)).empty());
        write_file(venv.tmp.path() / "outside-name", "import evil\n"); // the same size
        struct timespec times[2] = {was.st_atim, was.st_mtim};
        REQUIRE(::utimensat(AT_FDCWD, file.c_str(), times, 0) == 0);
        CHECK(listed(venv.since(before)) == std::vector<std::string>{"modified " + k_site + "torch/__init__.py"});
    }

    TEST_CASE("only the directories whose ctime moved are read again") {
        Venv venv;
        venvtx::LiveScan before = venv.scan();
        before.started_ns += 3'000'000'000; // as if the tree were older than the clock's slack
        next_tick();
        CHECK(venv.since(before).reread == 0);
        write_file(venv.site() / "torch" / "version.py", "v\n");
        venvtx::LiveCheck check = venv.since(before);
        CHECK(check.reread == 1);
        CHECK(listed(check) == std::vector<std::string>{"added " + k_site + "torch/version.py"});
    }

    TEST_CASE("a directory changed within the clock's slack before the scan is read again, changed or not") {
        // Its next change may keep its ctime: a filesystem that keeps whole seconds, or a
        // kernel whose clock moves a few milliseconds at a time (tests/e2e/test_hostile.py
        // WholeSecondTimestamps shows it on a real one).
        Venv venv;
        venvtx::LiveScan before = venv.scan(); // every directory was just made
        venvtx::LiveCheck check = venv.since(before);
        CHECK(check.reread == 7); // the root, lib, python3.12, site-packages, torch, torch/lib, the dist-info
        CHECK(listed(check).empty());
    }
}
