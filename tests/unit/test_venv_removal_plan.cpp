// Unit tests for plan_removal: what removing distributions takes, and what it must refuse.
#include "temp_dir.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/venv/inventory.hpp"
#include "venvtx/venv/layout.hpp"
#include "venvtx/venv/removal_plan.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace stdfs = std::filesystem;
using namespace venvtx;
using venvtx::test::TempDir;
using venvtx::test::write_file;

namespace {

const std::string k_site = "lib/python3.11/site-packages";

void write_dist(const stdfs::path& site, const std::string& name, const std::string& version,
                const std::string& record) {
    stdfs::path info = site / (name + "-" + version + ".dist-info");
    write_file(info / "METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n");
    write_file(info / "INSTALLER", "pip\n");
    write_file(info / "RECORD", record);
}

// venv with 'alpha' (files, bytecode, a script, a nested package) and 'beta', both owning
// shared/common.txt.
stdfs::path make_venv(const stdfs::path& tmp) {
    stdfs::path venv = tmp / "venv";
    stdfs::path site = venv / k_site;
    write_file(venv / "pyvenv.cfg", "home = /usr/bin\nversion = 3.11.9\n");
    write_file(venv / "bin/alpha-cli", "#!/bin/sh\n");
    write_file(site / "alpha/__init__.py", "");
    write_file(site / "alpha/mod.py", "x = 1\n");
    write_file(site / "alpha/__pycache__/mod.cpython-311.pyc", "pyc311");
    write_file(site / "alpha/__pycache__/mod.cpython-312.opt-1.pyc", "pyc312o1");
    write_file(site / "alpha/__pycache__/mod.pypy310.pyc", "pypy");
    write_file(site / "alpha/__pycache__/other.cpython-311.pyc", "unrelated");
    write_file(site / "alpha/sub/deep/leaf.py", "leaf = True\n");
    write_file(site / "shared/common.txt", "shared by alpha and beta\n");
    write_file(site / "beta/__init__.py", "");
    write_dist(site, "alpha", "1.0",
               "alpha/__init__.py,,\nalpha/mod.py,,\nalpha/sub/deep/leaf.py,,\n"
               "alpha/gone.py,,\nshared/common.txt,,\n../../../bin/alpha-cli,,\n"
               "alpha-1.0.dist-info/METADATA,,\nalpha-1.0.dist-info/RECORD,,\n");
    write_dist(site, "beta", "2.0", "beta/__init__.py,,\nshared/common.txt,,\nbeta-2.0.dist-info/RECORD,,\n");
    return venv;
}

std::set<std::string> paths_of(const std::vector<PlannedPath>& planned) {
    std::set<std::string> paths;
    for (const auto& p : planned) {
        paths.insert(p.path);
    }
    return paths;
}

int error_code_of(const VenvLayout& layout, const std::vector<std::string>& patterns) {
    try {
        plan_removal(layout, scan_inventory(layout), patterns, layout.root / ".venvtx");
    } catch (const Error& error) {
        return static_cast<int>(error.code());
    }
    return -1;
}

constexpr int k_usage = static_cast<int>(ExitCode::usage);

} // namespace

TEST_SUITE("plan_removal") {
    TEST_CASE("removing one distribution") {
        TempDir tmp;
        INFO("temp dir: " << tmp.path().string());
        auto layout = read_layout(make_venv(tmp.path()));
        auto dists = scan_inventory(layout);
        REQUIRE(dists.size() == 2);
        auto plan = plan_removal(layout, dists, {"ALPHA"}, layout.root / ".venvtx");

        REQUIRE(plan.targets.size() == 1);
        CHECK(plan.targets[0]->name == "alpha");
        auto files = paths_of(plan.files);
        const std::string s = k_site + "/";

        SUBCASE("listed files, its dist-info and its script are planned") {
            for (const char* rel : {"alpha/__init__.py", "alpha/mod.py", "alpha/sub/deep/leaf.py",
                                    "alpha-1.0.dist-info/METADATA", "alpha-1.0.dist-info/RECORD",
                                    "alpha-1.0.dist-info/INSTALLER"}) {
                CHECK_MESSAGE(files.count(s + rel) == 1, rel);
            }
            CHECK(files.count("bin/alpha-cli") == 1);
            CHECK(files.count(s + "beta/__init__.py") == 0);
            for (const auto& p : plan.files) {
                CHECK(p.owner == "alpha");
                CHECK(p.state.type == NodeType::file);
            }
        }

        SUBCASE("a file the staying distribution also owns is kept") {
            CHECK(files.count(s + "shared/common.txt") == 0);
            REQUIRE(plan.shared_kept.size() == 1);
            CHECK(plan.shared_kept[0].path == s + "shared/common.txt");
            CHECK(plan.shared_kept[0].kept_for == "beta");
            CHECK(paths_of(plan.dirs).count(s + "shared") == 0);
        }

        SUBCASE("bytecode of removed sources, any interpreter and optimization level") {
            CHECK(files.count(s + "alpha/__pycache__/mod.cpython-311.pyc") == 1);
            CHECK(files.count(s + "alpha/__pycache__/mod.cpython-312.opt-1.pyc") == 1);
            CHECK(files.count(s + "alpha/__pycache__/mod.pypy310.pyc") == 1);
            CHECK(files.count(s + "alpha/__pycache__/other.cpython-311.pyc") == 0);
        }

        SUBCASE("directories left empty, deepest first, never the roots") {
            // As pip: a directory that holds a removed file goes when all below it goes; alpha/sub
            // holds none itself, so it stays (empty), as `pip uninstall` leaves it.
            auto dirs = paths_of(plan.dirs);
            CHECK(dirs == std::set<std::string>{s + "alpha/sub/deep", s + "alpha-1.0.dist-info"});
            for (size_t i = 0; i < plan.dirs.size(); ++i) {
                for (size_t j = i + 1; j < plan.dirs.size(); ++j) {
                    CHECK_MESSAGE(plan.dirs[j].path.rfind(plan.dirs[i].path + "/", 0) != 0,
                                  plan.dirs[i].path << " comes before its child " << plan.dirs[j].path);
                }
            }
            CHECK(dirs.count("bin") == 0);
            CHECK(dirs.count(k_site) == 0);
        }

        SUBCASE("missing files and byte count") {
            CHECK(std::count(plan.missing.begin(), plan.missing.end(), s + "alpha/gone.py") +
                      std::count(plan.missing.begin(), plan.missing.end(), "alpha/gone.py") ==
                  1);
            std::uint64_t bytes = 0;
            for (const auto& p : plan.files) {
                bytes += stdfs::file_size(layout.root / p.path);
            }
            CHECK(plan.bytes == bytes);
        }
    }

    TEST_CASE("removing everything never plans site-packages, its parents or bin") {
        TempDir tmp;
        INFO("temp dir: " << tmp.path().string());
        auto layout = read_layout(make_venv(tmp.path()));
        stdfs::remove(layout.root / k_site / "alpha/__pycache__/other.cpython-311.pyc");
        auto plan = plan_removal(layout, scan_inventory(layout), {"alpha", "b*"}, layout.root / ".venvtx");
        CHECK(plan.targets.size() == 2);
        auto dirs = paths_of(plan.dirs);
        for (const char* root : {"bin", "lib", "lib/python3.11", "lib/python3.11/site-packages", "", "."}) {
            CHECK_MESSAGE(dirs.count(root) == 0, root);
        }
        CHECK(dirs.count(k_site + "/alpha/__pycache__") == 1);
        CHECK(dirs.count(k_site + "/alpha") == 1);
        CHECK(dirs.count(k_site + "/shared") == 1);
        CHECK(plan.shared_kept.empty());
    }

    TEST_CASE("refusals are usage errors") {
        TempDir tmp;
        INFO("temp dir: " << tmp.path().string());
        stdfs::path venv = make_venv(tmp.path());
        stdfs::path site = venv / k_site;

        SUBCASE("an unmatched pattern") {
            CHECK(error_code_of(read_layout(venv), {"alpha", "gamma"}) == k_usage);
        }

        SUBCASE("a target without RECORD; a staying one without RECORD is fine") {
            write_file(site / "gamma-3.0.dist-info/METADATA", "Name: gamma\nVersion: 3.0\n");
            auto layout = read_layout(venv);
            CHECK(error_code_of(layout, {"gamma"}) == k_usage);
            CHECK(error_code_of(layout, {"alpha"}) == -1);
        }

        SUBCASE("a RECORD path escaping the venv") {
            write_file(tmp.path() / "tmp/canary", "outside");
            write_dist(site, "delta", "1.0", "delta/x.py,,\n../../../../tmp/canary,,\n");
            CHECK(error_code_of(read_layout(venv), {"delta"}) == k_usage);
            CHECK(stdfs::exists(tmp.path() / "tmp/canary"));
        }

        SUBCASE("a malformed RECORD") {
            write_dist(site, "delta", "1.0", "delta/x.py,,\n\"torn");
            CHECK(error_code_of(read_layout(venv), {"delta"}) == k_usage);
        }
    }
}
