// Fs: the mutating calls of the seam, including moves across filesystems.
#include "temp_dir.hpp"

#include "venvtx/core/fs.hpp"
#include "venvtx/core/node_state.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>

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
