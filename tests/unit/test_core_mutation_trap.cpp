// MutationTrap and the syscall decoder: a real child (python3) makes real system calls under
// the filter; the handler sees each change, with its path resolved, before it happens.
#include "venvtx/core/mutation_trap.hpp"
#include "venvtx/core/subprocess.hpp"

#include "temp_dir.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <functional>
#include <stdexcept>
#include <sys/stat.h>

using venvtx::ChangeKind;
using venvtx::MutationTrap;
using venvtx::PendingChange;
using venvtx::SubprocessResult;
using venvtx::SubprocessSpec;
namespace stdfs = std::filesystem;

namespace {

struct Seen {
    std::string path;  // relative to the test directory
    ChangeKind kind;
    bool existed;      // whether the path existed when the call was stopped
};

struct Watched {
    SubprocessResult result;
    std::vector<Seen> seen;
    std::optional<std::string> failure;
};

// Runs `code` (python, cwd = dir) under a trap whose handler records changes below `dir`, and
// throws at the first one whose path ends with `refuse` (when given).
Watched watch(const stdfs::path& dir, const std::string& code, const std::string& refuse = "") {
    MutationTrap trap;
    Watched watched;
    std::string root = stdfs::canonical(dir).string() + "/";
    SubprocessSpec spec;
    spec.argv = {"python3", "-S", "-c", "import os; os.chdir(" + std::string("'") + dir.string() + "'); " + code};
    spec.trap = &trap;
    spec.on_change = [&](const std::vector<PendingChange>& changes) {
        for (const auto& change : changes) {
            std::string path = change.path.string();
            if (path.compare(0, root.size(), root) != 0) {
                continue;
            }
            std::string rel = path.substr(root.size());
            if (!refuse.empty() && rel.size() >= refuse.size() &&
                rel.compare(rel.size() - refuse.size(), refuse.size(), refuse) == 0) {
                throw std::runtime_error("refused " + rel);
            }
            struct stat st {};
            watched.seen.push_back({rel, change.kind, ::lstat(path.c_str(), &st) == 0});
        }
    };
    watched.result = venvtx::run_subprocess(spec);
    watched.failure = trap.failure();
    return watched;
}

bool saw(const Watched& watched, const std::string& path, ChangeKind kind) {
    for (const auto& seen : watched.seen) {
        if (seen.path == path && seen.kind == kind) {
            return true;
        }
    }
    return false;
}

void write_file(const stdfs::path& path, const std::string& text) {
    std::ofstream(path) << text;
}

} // namespace

TEST_SUITE("MutationTrap") {
    TEST_CASE("each kind of change is seen before it happens, with its path resolved") {
        if (!MutationTrap::supported()) {
            MESSAGE("seccomp user notification unavailable here: skipped");
            return;
        }
        venvtx::test::TempDir tmp;
        stdfs::create_directories(tmp.path() / "pkg" / "sub");
        for (const char* name : {"pkg/a.py", "pkg/b.py", "pkg/c.py", "pkg/sub/d.py", "e.txt", "f.txt", "g.txt"}) {
            write_file(tmp.path() / name, "old\n");
        }
        stdfs::create_directory_symlink("pkg", tmp.path() / "alias");
        Watched watched = watch(tmp.path(),
                                "fd = os.open('pkg', os.O_RDONLY | os.O_DIRECTORY); "
                                "os.unlink('a.py', dir_fd=fd); "                      // unlinkat, dirfd
                                "open('alias/b.py', 'a').write('x'); "                 // openat through a symlink
                                "open('e.txt').read(); "                               // read-only: not trapped
                                "os.chmod('f.txt', 0o600); "                           // fchmodat
                                "g = os.open('g.txt', os.O_RDONLY); os.utime(g); "     // utimensat on an fd
                                "os.truncate('pkg/c.py', 0); "                         // truncate
                                "os.mkdir('new'); os.symlink('e.txt', 'new/link'); "   // created paths
                                "os.rename('pkg/sub', 'moved')");                      // rename: both sides
        CHECK(watched.result.exit_code == 0);
        CHECK_FALSE(watched.failure);
        CHECK(saw(watched, "pkg/a.py", ChangeKind::replace));
        CHECK(saw(watched, "pkg/b.py", ChangeKind::write));
        CHECK(saw(watched, "f.txt", ChangeKind::replace));
        CHECK(saw(watched, "g.txt", ChangeKind::replace));
        CHECK(saw(watched, "pkg/c.py", ChangeKind::write));
        CHECK(saw(watched, "new", ChangeKind::replace));
        CHECK(saw(watched, "new/link", ChangeKind::replace));
        CHECK(saw(watched, "pkg/sub", ChangeKind::move_tree));
        CHECK(saw(watched, "moved", ChangeKind::replace));
        for (const auto& seen : watched.seen) {
            CHECK_MESSAGE(seen.path != "e.txt", "a read-only open was trapped");
            if (seen.path == "pkg/a.py" || seen.path == "pkg/sub") {
                CHECK_MESSAGE(seen.existed, seen.path << " was gone before the handler ran");
            }
        }
    }

    TEST_CASE("a change the handler fails is refused with EIO; the first failure is kept") {
        if (!MutationTrap::supported()) {
            return;
        }
        venvtx::test::TempDir tmp;
        write_file(tmp.path() / "keep.txt", "old\n");
        write_file(tmp.path() / "later.txt", "old\n");
        Watched watched = watch(tmp.path(),
                                "import sys\n"
                                "try:\n    os.unlink('keep.txt')\nexcept OSError as e:\n    print(e.errno)\n"
                                "try:\n    os.unlink('later.txt')\nexcept OSError as e:\n    print(e.errno)\n",
                                "keep.txt");
        CHECK(watched.result.exit_code == 0);
        REQUIRE(watched.failure);
        CHECK(watched.failure->find("refused keep.txt") != std::string::npos);
        CHECK(watched.result.out == "5\n");
        CHECK(stdfs::exists(tmp.path() / "keep.txt"));
        CHECK_FALSE(stdfs::exists(tmp.path() / "later.txt"));
    }

    TEST_CASE("io_uring, which seccomp cannot see into, is refused") {
        if (!MutationTrap::supported()) {
            return;
        }
        venvtx::test::TempDir tmp;
        Watched watched = watch(tmp.path(),
                                "import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
                                "params = ctypes.create_string_buffer(120); "
                                "print(libc.syscall(425, 8, params), ctypes.get_errno())");
        CHECK(watched.result.exit_code == 0);
        CHECK(watched.result.out == "-1 38\n");
    }

    TEST_CASE("a path another thread flips while the call is held: what changes is what was seen") {
        // The kernel would read the path again once the call goes on; venvtx makes the calls
        // that lose bytes itself, on the path it read (core/emulated_call).
        if (!MutationTrap::supported()) {
            return;
        }
        // call: what the command does with the flipped path; hit: whether a victim was reached.
        struct Attack {
            const char* call;
            ChangeKind kind;
            std::function<bool(const stdfs::path&)> hit;
        };
        std::vector<Attack> attacks = {
            {"libc.unlink(buffer)", ChangeKind::replace, [](const stdfs::path& p) { return !stdfs::exists(p); }},
            {"libc.close(libc.open(buffer, os.O_WRONLY | os.O_TRUNC))", ChangeKind::write,
             [](const stdfs::path& p) { return stdfs::file_size(p) == 0; }},
            {"libc.rename(buffer, b'outside/sink')", ChangeKind::move_tree,
             [](const stdfs::path& p) { return !stdfs::exists(p); }},
        };
        for (const auto& attack : attacks) {
            std::string call = attack.call;
            CAPTURE(call);
            venvtx::test::TempDir tmp;
            stdfs::create_directories(tmp.path() / "venv");
            stdfs::create_directories(tmp.path() / "outside");
            write_file(tmp.path() / "outside" / "d100", "decoy\n");
            const int victims = 20;
            for (int i = 0; i < victims; ++i) {
                write_file(tmp.path() / "venv" / ("v" + std::to_string(100 + i)), "old\n");
            }
            Watched watched = watch(tmp.path(),
                                    "import ctypes, threading, time\n"
                                    "libc = ctypes.CDLL(None, use_errno=True)\n"
                                    "buffer = ctypes.create_string_buffer(64)\n"
                                    "def reached(victim):\n"
                                    "    return not os.path.exists(victim) or os.path.getsize(victim) == 0\n"
                                    "def flip(victim, until):\n"
                                    "    while time.monotonic() < until and not reached(victim):\n"
                                    "        ctypes.memmove(buffer, victim.encode() + b'\\0', len(victim) + 1)\n"
                                    "        ctypes.memmove(buffer, b'outside/d100\\0', 13)\n"
                                    "for i in range(" + std::to_string(victims) + "):\n"
                                    "    victim = 'venv/v%d' % (100 + i)\n"
                                    "    until = time.monotonic() + 0.2\n"
                                    "    flipper = threading.Thread(target=flip, args=(victim, until)); flipper.start()\n"
                                    "    while time.monotonic() < until and not reached(victim):\n"
                                    "        " + std::string(attack.call) + "\n"
                                    "        open('outside/d100', 'w').write('decoy')\n"
                                    "    flipper.join()\n");
            CHECK(watched.result.exit_code == 0);
            int reached = 0;
            for (int i = 0; i < victims; ++i) {
                std::string victim = "venv/v" + std::to_string(100 + i);
                if (attack.hit(tmp.path() / victim)) {
                    ++reached;
                    CHECK_MESSAGE(saw(watched, victim, attack.kind), victim << " was changed unseen");
                }
            }
            CHECK(reached > victims / 2); // the race was run: most victims were reached
        }
    }
}
