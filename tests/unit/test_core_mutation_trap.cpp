// MutationTrap and the syscall decoder: a real child (python3) makes real system calls under
// the filter; the handler sees each change, with its path resolved, before it happens.
#include "venvtx/core/mutation_trap.hpp"
#include "venvtx/core/subprocess.hpp"

#include "temp_dir.hpp"

#include <doctest/doctest.h>

#include <algorithm>
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

int times_seen(const Watched& watched, const std::string& path, ChangeKind kind) {
    return static_cast<int>(std::count_if(watched.seen.begin(), watched.seen.end(), [&](const Seen& seen) {
        return seen.path == path && seen.kind == kind;
    }));
}

bool saw(const Watched& watched, const std::string& path, ChangeKind kind) {
    return times_seen(watched, path, kind) > 0;
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

    TEST_CASE("the kernel makes the call with the command's own limits: a Landlock sandbox holds") {
        if (!MutationTrap::supported()) {
            return;
        }
        venvtx::test::TempDir tmp;
        write_file(tmp.path() / "victim.txt", "old\n");
        write_file(tmp.path() / "short.txt", "old\n");
        // Landlock (ABI 3+): no writing, removing or truncating files anywhere, then both tried.
        Watched watched = watch(tmp.path(),
                                "import ctypes\n"
                                "libc = ctypes.CDLL(None, use_errno=True)\n"
                                "attr = (ctypes.c_uint64 * 1)((1 << 1) | (1 << 4) | (1 << 5) | (1 << 14))\n"
                                "ruleset = libc.syscall(444, attr, 8, 0)\n"
                                "if ruleset < 0 or libc.prctl(38, 1, 0, 0, 0) or libc.syscall(446, ruleset, 0):\n"
                                "    print('no landlock'); raise SystemExit\n"
                                "for call in (lambda: os.unlink('victim.txt'), lambda: os.truncate('short.txt', 0)):\n"
                                "    try:\n        call(); print(0)\n    except OSError as e:\n        print(e.errno)\n");
        CHECK(watched.result.exit_code == 0);
        if (watched.result.out == "no landlock\n") {
            MESSAGE("Landlock unavailable here: skipped");
            return;
        }
        CHECK(watched.result.out == "13\n13\n");
        CHECK(stdfs::exists(tmp.path() / "victim.txt"));
        CHECK(stdfs::file_size(tmp.path() / "short.txt") == 4);
    }

    TEST_CASE("/dev/fd/N, /dev/stdout and /proc/self are the command's own descriptors") {
        if (!MutationTrap::supported()) {
            return;
        }
        venvtx::test::TempDir tmp;
        Watched watched = watch(tmp.path(),
                                "out = os.open('out.txt', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644); os.dup2(out, 1)\n"
                                "seven = os.open('seven.txt', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644); os.dup2(seven, 7)\n"
                                "self = os.open('self.txt', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)\n"
                                "open('/dev/stdout', 'w').write('stdout\\n')\n"
                                "open('/dev/fd/7', 'w').write('seven\\n')\n"
                                "open('/proc/self/fd/%d' % self, 'w').write('self\\n')\n");
        CHECK(watched.result.exit_code == 0);
        CHECK_FALSE(watched.failure);
        for (const char* name : {"out.txt", "seven.txt", "self.txt"}) {
            CAPTURE(name);
            CHECK(times_seen(watched, name, ChangeKind::write) == 2); // opened by name, then through the link
        }
        std::ifstream out(tmp.path() / "out.txt"), seven(tmp.path() / "seven.txt"), self(tmp.path() / "self.txt");
        std::string line;
        CHECK((std::getline(out, line) && line == "stdout"));
        CHECK((std::getline(seven, line) && line == "seven"));
        CHECK((std::getline(self, line) && line == "self"));
    }

    TEST_CASE("openat2 with RESOLVE_IN_ROOT names a path below its directory, not below venvtx's") {
        if (!MutationTrap::supported()) {
            return;
        }
        venvtx::test::TempDir tmp;
        stdfs::create_directories(tmp.path() / "proj");
        Watched watched = watch(tmp.path(),
                                "import ctypes\n"
                                "libc = ctypes.CDLL(None, use_errno=True)\n"
                                "how = (ctypes.c_uint64 * 3)(os.O_WRONLY | os.O_CREAT, 0o644, 0x10)\n"
                                "base = os.open('proj', os.O_RDONLY | os.O_DIRECTORY)\n"
                                "fd = libc.syscall(437, base, b'/notes.txt', how, 24)\n"
                                "os.write(fd, b'mine\\n'); print(fd > 0)\n");
        CHECK(watched.result.out == "True\n");
        CHECK(saw(watched, "proj/notes.txt", ChangeKind::write));
        CHECK(stdfs::exists(tmp.path() / "proj" / "notes.txt"));
    }

    TEST_CASE("a descriptor's file given a name (linkat AT_EMPTY_PATH) and an exchange are seen both ways") {
        if (!MutationTrap::supported()) {
            return;
        }
        venvtx::test::TempDir tmp;
        stdfs::create_directories(tmp.path() / "outside");
        write_file(tmp.path() / "held.txt", "venv\n");
        write_file(tmp.path() / "inside.txt", "venv\n");
        write_file(tmp.path() / "outside" / "other.txt", "outside\n");
        std::vector<std::pair<std::string, std::string>> moves;
        MutationTrap trap;
        SubprocessSpec spec;
        std::string root = stdfs::canonical(tmp.path()).string() + "/";
        spec.argv = {"python3", "-S", "-c",
                     "import ctypes, os; os.chdir('" + tmp.path().string() + "')\n"
                     "libc = ctypes.CDLL(None, use_errno=True)\n"
                     "fd = os.open('held.txt', os.O_RDONLY)\n"
                     "print(libc.linkat(fd, b'', -100, b'outside/second', 0x1000))\n"
                     "print(libc.renameat2(-100, b'outside/other.txt', -100, b'inside.txt', 2))\n"};
        spec.trap = &trap;
        spec.on_change = [&](const std::vector<PendingChange>& changes) {
            for (const auto& change : changes) {
                std::string from = change.path.string(), to = change.moves_to.string();
                from = from.rfind(root, 0) == 0 ? from.substr(root.size()) : from;
                to = to.rfind(root, 0) == 0 ? to.substr(root.size()) : to;
                moves.emplace_back(from + (change.kind == ChangeKind::second_name ? " (second name)" : ""), to);
            }
        };
        SubprocessResult result = venvtx::run_subprocess(spec);
        CHECK(result.out == "0\n0\n");
        using Move = std::pair<std::string, std::string>;
        CHECK(std::find(moves.begin(), moves.end(), Move{"held.txt (second name)", ""}) != moves.end());
        CHECK(std::find(moves.begin(), moves.end(), Move{"outside/other.txt", "inside.txt"}) != moves.end());
        CHECK(std::find(moves.begin(), moves.end(), Move{"inside.txt", "outside/other.txt"}) != moves.end());
    }
}
