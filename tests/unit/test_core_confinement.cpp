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
#include <string>
#include <sys/stat.h>
#include <utility>
#include <vector>

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

    TEST_CASE("a symlink at any directory of the path, inside the root or out, relative or absolute: "
              "every mutating call is refused and the tree it points to stays as it was") {
        // Refused by the seam itself (openat2's RESOLVE_NO_SYMLINKS, RESOLVE_BENEATH), not by a
        // planner: a link that stays inside the root is within RESOLVE_BENEATH and must still
        // be refused, or a removal would move the user's own files into the store.
        const std::vector<std::string> components = {"a", "a/b", "a/b/c"};
        for (const auto& component : components) {
            for (bool outside : {false, true}) {
                for (bool absolute : {false, true}) {
                    CAPTURE(component);
                    CAPTURE(outside);
                    CAPTURE(absolute);
                    TempDir top;
                    auto venv = top.path() / "venv";
                    write_file(venv / "a" / "b" / "c" / "mod.py", "inside");
                    std::filesystem::create_directories(venv / "a" / "b" / "c" / "empty");
                    write_file(venv / "top.py", "top");
                    Confinement::instance().set_roots({venv});
                    // The real directory moves aside (inside) or is copied out (outside); the
                    // component becomes a link to it.
                    auto link = venv / component;
                    auto target = outside ? top.path() / ("outside-" + link.filename().string())
                                          : link.parent_path() / (link.filename().string() + "-real");
                    std::filesystem::copy(link, target, std::filesystem::copy_options::recursive);
                    std::filesystem::remove_all(link);
                    std::filesystem::create_symlink(absolute ? target : target.lexically_relative(link.parent_path()),
                                                    link);
                    auto snapshot = [&] {
                        std::string facts;
                        for (const auto& entry : std::filesystem::recursive_directory_iterator(target)) {
                            struct stat st {};
                            ::lstat(entry.path().c_str(), &st);
                            facts += entry.path().string() + " " + std::to_string(st.st_mode) + " " +
                                     std::to_string(st.st_mtim.tv_sec) + " " + std::to_string(st.st_mtim.tv_nsec) +
                                     " " + std::to_string(st.st_nlink) + " " +
                                     (entry.is_regular_file() ? read_file(entry.path()) : "") + "\n";
                        }
                        return facts;
                    };
                    std::string before = snapshot();
                    Fs& fs = Fs::instance();
                    auto dir = venv / "a" / "b" / "c";
                    auto file = dir / "mod.py";
                    std::vector<std::pair<const char*, std::function<void()>>> calls = {
                        {"unlink", [&] { fs.unlink(file); }},
                        {"rmdir", [&] { fs.rmdir(dir / "empty"); }},
                        {"rename from", [&] { fs.rename(file, venv / "x.py"); }},
                        {"rename to", [&] { fs.rename(venv / "top.py", dir / "new.py"); }},
                        {"move", [&] { fs.move(file, venv / "x.py", 0644); }},
                        {"mkdir", [&] { fs.mkdir(dir / "d", 0755); }},
                        {"mkdirs", [&] { fs.mkdirs(dir / "d1" / "d2"); }},
                        {"remove_tree", [&] { fs.remove_tree(dir / "empty"); }},
                        {"symlink", [&] { fs.symlink("t", dir / "lnk"); }},
                        {"mkfifo", [&] { fs.mkfifo(dir / "fifo", 0644); }},
                        {"link from", [&] { fs.link(file, venv / "hard.py"); }},
                        {"link to", [&] { fs.link(venv / "top.py", dir / "hard.py"); }},
                        {"link_or_copy", [&] { fs.link_or_copy(venv / "top.py", dir / "hard2.py", 0644); }},
                        {"chmod", [&] { fs.chmod(file, 0600); }},
                        {"set_mtime", [&] { fs.set_mtime(file, 0); }},
                        {"copy_file to", [&] { fs.copy_file(venv / "top.py", dir / "copy.py", 0644); }},
                        {"copy_whole to", [&] { fs.copy_whole(venv / "top.py", dir / "copy2.py", 0644); }},
                        {"create_file", [&] { fs.create_file(dir / "pack", 0644); }},
                        {"drop_overlay_xattrs", [&] { fs.drop_overlay_xattrs(file); }},
                        {"take_parent_owner", [&] { fs.take_parent_owner(file); }},
                    };
                    for (const auto& [name, call] : calls) {
                        std::string what = name;
                        CAPTURE(what);
                        CHECK(errno_of(call) != 0);
                        CHECK(snapshot() == before);
                    }
                    CHECK(observe_node(link).type == NodeType::symlink);
                    CHECK(read_file(venv / "top.py") == "top");
                }
            }
        }
    }
}
