// Confinement: the fs seam reaches paths beneath its roots and never through a symlink.
#include "temp_dir.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/core/node_state.hpp"

#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

using venvtx::Confinement;
using venvtx::Fs;
using venvtx::FsError;
using venvtx::NodeType;
using venvtx::observe_node;
using venvtx::test::TempDir;
using venvtx::test::write_file;

namespace {

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream content;
    content << in.rdbuf();
    return content.str();
}

int errno_of(const std::function<void()>& call) {
    try {
        call();
    } catch (const FsError& error) {
        return error.errno_value();
    }
    return 0;
}

// A symlink met on the way: ELOOP, or ENOTDIR where it is the directory to open last.
int refused(int err) {
    return err == ELOOP || err == ENOTDIR ? ELOOP : err;
}

// A venv root with pkg/ inside, and a sentinel directory outside it that pkg/ is swapped for.
struct Scene {
    TempDir top;
    std::filesystem::path venv = top.path() / "venv";
    std::filesystem::path outside = top.path() / "outside";

    Scene() {
        write_file(venv / "pkg" / "mod.py", "inside");
        write_file(outside / "mod.py", "outside");
        Confinement::instance().set_roots({venv});
    }
    void swap_pkg_for_symlink() {
        std::filesystem::rename(venv / "pkg", top.path() / "pkg-moved");
        std::filesystem::create_symlink(outside, venv / "pkg");
    }
};

} // namespace

TEST_SUITE("Confinement") {
    TEST_CASE(
        "every mutation through a symlinked directory is refused and changes nothing outside") {
        Scene scene;
        scene.swap_pkg_for_symlink();
        Fs& fs = Fs::instance();
        auto target = scene.venv / "pkg" / "mod.py";
        CHECK(refused(errno_of([&] { fs.unlink(target); })) == ELOOP);
        CHECK(refused(errno_of([&] { fs.rename(target, scene.venv / "x"); })) == ELOOP);
        CHECK(refused(errno_of([&] { fs.rename(scene.venv / "x", target); })) == ELOOP);
        CHECK(refused(errno_of([&] { fs.chmod(target, 0600); })) == ELOOP);
        CHECK(refused(errno_of([&] { fs.set_mtime(target, 0); })) == ELOOP);
        CHECK(refused(errno_of([&] { fs.symlink("t", scene.venv / "pkg" / "new"); })) == ELOOP);
        CHECK(refused(errno_of([&] { fs.mkdir(scene.venv / "pkg" / "d", 0755); })) == ELOOP);
        CHECK(refused(errno_of([&] { fs.copy_file(target, scene.venv / "copy", 0644); })) == ELOOP);
        CHECK(refused(errno_of([&] { fs.link(target, scene.venv / "hard"); })) == ELOOP);
        CHECK(refused(errno_of([&] { fs.remove_tree(scene.venv / "pkg" / "mod.py"); })) != 0);
        CHECK(read_file(scene.outside / "mod.py") == "outside");
        CHECK(std::filesystem::directory_iterator(scene.outside) !=
              std::filesystem::directory_iterator());
        CHECK(observe_node(target).type == NodeType::absent);
        CHECK(observe_node(scene.venv / "pkg").type == NodeType::symlink);
    }

    TEST_CASE("the last component is never followed: a symlink is removed or changed as a link") {
        Scene scene;
        std::filesystem::create_symlink(scene.outside / "mod.py", scene.venv / "link");
        Fs::instance().remove_tree(scene.venv / "link");
        CHECK(observe_node(scene.venv / "link").type == NodeType::absent);
        CHECK(read_file(scene.outside / "mod.py") == "outside");
        std::filesystem::create_symlink(scene.outside, scene.venv / "dirlink");
        Fs::instance().remove_tree(scene.venv / "dirlink");
        CHECK(read_file(scene.outside / "mod.py") == "outside");
    }

    TEST_CASE("paths outside every root, or climbing out with .., are refused") {
        Scene scene;
        CHECK(refused(errno_of([&] { Fs::instance().unlink(scene.outside / "mod.py"); })) == EPERM);
        CHECK(refused(errno_of([&] {
                  Fs::instance().unlink(scene.venv / ".." / "outside" / "mod.py");
              })) == EPERM);
        CHECK(refused(errno_of([&] { Fs::instance().mkdirs(scene.outside / "new"); })) == EPERM);
        CHECK(read_file(scene.outside / "mod.py") == "outside");
    }

    TEST_CASE("a store inside the venv is reached through the venv: a symlinked store is refused") {
        Scene scene;
        std::filesystem::create_symlink(scene.outside, scene.venv / ".venvtx");
        Confinement::instance().set_roots({scene.venv / ".venvtx", scene.venv});
        CHECK(refused(errno_of(
                  [&] { Fs::instance().mkdirs(scene.venv / ".venvtx" / "objects"); })) != 0);
        CHECK(!std::filesystem::exists(scene.outside / "objects"));
    }

    TEST_CASE("ordinary work beneath the root goes through") {
        Scene scene;
        Fs& fs = Fs::instance();
        fs.mkdirs(scene.venv / "a" / "b");
        fs.rename(scene.venv / "pkg" / "mod.py", scene.venv / "a" / "b" / "mod.py");
        fs.chmod(scene.venv / "a" / "b" / "mod.py", 0600);
        CHECK(observe_node(scene.venv / "a" / "b" / "mod.py").mode == 0600);
        fs.remove_tree(scene.venv / "a");
        CHECK(observe_node(scene.venv / "a").type == NodeType::absent);
    }
}
