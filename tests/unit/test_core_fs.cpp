// Fs: the mutating calls of the seam, including moves across filesystems.
#include "temp_dir.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/core/node_state.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

using venvtx::Fs;
using venvtx::FsError;
using venvtx::NodeType;
using venvtx::observe_node;
using venvtx::test::TempDir;
using venvtx::test::write_file;

TEST_SUITE("Fs") {
    TEST_CASE("copy_file keeps bytes and mode, and refuses to overwrite") {
        TempDir dir;
        write_file(dir.path() / "a", std::string(100000, 'x'));
        Fs::instance().copy_file(dir.path() / "a", dir.path() / "b", 0750);
        auto copied = observe_node(dir.path() / "b");
        CHECK(copied.type == NodeType::file);
        CHECK(copied.size == 100000);
        CHECK(copied.mode == 0750);
        CHECK_THROWS_AS(Fs::instance().copy_file(dir.path() / "a", dir.path() / "b", 0644), FsError);
    }

    TEST_CASE("move crosses filesystems for files and symlinks") {
        TempDir here;
        std::filesystem::path there = "/dev/shm";
        struct stat a {}, b {};
        if (::stat(there.c_str(), &b) != 0 || ::stat(here.path().c_str(), &a) != 0 || a.st_dev == b.st_dev) {
            return; // no second filesystem on this machine
        }
        std::string name = "venvtx-unit-move-" + here.path().filename().string();
        venvtx::Confinement::instance().set_roots({here.path(), there});
        write_file(here.path() / "file", "bytes");
        Fs::instance().move(here.path() / "file", there / name, 0640);
        CHECK(observe_node(here.path() / "file").type == NodeType::absent);
        CHECK(observe_node(there / name).mode == 0640);
        std::filesystem::remove(there / name);
        std::filesystem::create_symlink("../target", here.path() / "link");
        Fs::instance().move(here.path() / "link", there / name, 0);
        CHECK(observe_node(there / name).link_target == "../target");
        std::filesystem::remove(there / name);
    }

    TEST_CASE("move across filesystems replaces its target whole and keeps holes, xattrs and times") {
        TempDir here;
        std::filesystem::path there = "/dev/shm";
        struct stat a {}, b {};
        if (::stat(there.c_str(), &b) != 0 || ::stat(here.path().c_str(), &a) != 0 || a.st_dev == b.st_dev) {
            return; // no second filesystem on this machine
        }
        std::filesystem::path target = there / ("venvtx-unit-replace-" + here.path().filename().string());
        venvtx::Confinement::instance().set_roots({here.path(), there});
        std::filesystem::path source = here.path() / "sparse";
        {
            std::ofstream out(source, std::ios::binary);
            out.seekp(5 << 20);
            out.put('x');
        }
        CHECK(::setxattr(source.c_str(), "user.venvtx.unit", "kept", 4, 0) == 0);
        struct timespec times[2] = {{1'600'000'000, 5}, {1'600'000'000, 123'456'789}};
        CHECK(::utimensat(AT_FDCWD, source.c_str(), times, 0) == 0);
        write_file(target, "what stood there before"); // a restore's target: replaced, never refused
        Fs::instance().move(source, target, 0640);
        struct stat st {};
        REQUIRE(::stat(target.c_str(), &st) == 0);
        CHECK(st.st_size == (5 << 20) + 1);
        CHECK(st.st_blocks * 512 < (1 << 20)); // still sparse
        CHECK(st.st_mtim.tv_nsec == 123'456'789);
        std::filesystem::path probe = target.string() + ".xattr-probe";
        write_file(probe, "");
        bool user_xattrs_there = ::setxattr(probe.c_str(), "user.venvtx.probe", "1", 1, 0) == 0; // tmpfs: Linux 6.6+
        std::filesystem::remove(probe);
        char value[8] = {};
        if (user_xattrs_there) {
            CHECK(::getxattr(target.c_str(), "user.venvtx.unit", value, sizeof value) == 4);
            CHECK(std::string(value, 4) == "kept");
        }
        CHECK(observe_node(source).type == NodeType::absent);
        CHECK(observe_node(Fs::move_temporary(target)).type == NodeType::absent);
        std::filesystem::remove(target);
    }

    TEST_CASE("flush skips what is no longer a regular file or a directory") {
        // What is there now is not the change's: a symlink, a fifo (fdatasync refuses one), a
        // file where a directory was, a path gone.
        TempDir dir;
        write_file(dir.path() / "a", "x");
        REQUIRE(::symlink("a", (dir.path() / "link").c_str()) == 0);
        REQUIRE(::mkfifo((dir.path() / "fifo").c_str(), 0644) == 0);
        CHECK_NOTHROW(Fs::instance().flush(
            {dir.path() / "a", dir.path() / "link", dir.path() / "fifo", dir.path() / "gone", dir.path() / "gone" / "b"},
            {dir.path(), dir.path() / "a", dir.path() / "fifo", dir.path() / "gone"}, dir.path()));
    }

    TEST_CASE("failed calls carry errno") {
        TempDir dir;
        try {
            Fs::instance().rename(dir.path() / "missing", dir.path() / "x");
            FAIL("renamed a missing file");
        } catch (const FsError& error) {
            CHECK(error.errno_value() == ENOENT);
        }
        Fs::instance().mkdirs(dir.path() / "a" / "b" / "c");
        CHECK(observe_node(dir.path() / "a" / "b" / "c").type == NodeType::dir);
        write_file(dir.path() / "a" / "b" / "c" / "f", "x");
        try {
            Fs::instance().rmdir(dir.path() / "a" / "b" / "c");
            FAIL("removed a full directory");
        } catch (const FsError& error) {
            CHECK(error.errno_value() == ENOTEMPTY);
        }
    }
}
