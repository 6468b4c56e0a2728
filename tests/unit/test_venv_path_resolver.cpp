// Unit tests for PathResolver: RECORD paths become venv-relative or are refused.
#include "temp_dir.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/venv/layout.hpp"
#include "venvtx/venv/path_resolver.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <optional>
#include <string>

namespace stdfs = std::filesystem;
using venvtx::Error;
using venvtx::ExitCode;
using venvtx::PathResolver;
using venvtx::read_layout;
using venvtx::test::TempDir;
using venvtx::test::write_file;

namespace {

const std::string k_site = "lib/python3.11/site-packages";

// A fake venv in `tmp`/venv, with lib64 -> lib, a store, and site-packages/escape -> tmp/outside.
stdfs::path make_venv(const stdfs::path& tmp) {
    stdfs::path venv = tmp / "venv";
    write_file(venv / "pyvenv.cfg", "home = /usr/bin\nversion = 3.11.9\n");
    write_file(venv / k_site / "pkg/mod.py", "x = 1\n");
    write_file(venv / "bin/tool", "#!/bin/sh\n");
    write_file(venv / ".venvtx/objects/ab/cdef", "object");
    stdfs::create_symlink("lib", venv / "lib64");
    write_file(tmp / "outside/canary", "do not touch");
    stdfs::create_directory_symlink(tmp / "outside", venv / k_site / "escape");
    stdfs::create_symlink("/etc/hostname", venv / k_site / "pkg/link");
    return venv;
}

// The exit code of the Error `resolve` throws, or -1 when it returns.
int error_code_of(PathResolver& resolver, const stdfs::path& base, const std::string& path) {
    try {
        resolver.resolve(base, path, "victim");
    } catch (const Error& error) {
        CHECK(std::string(error.what()).find("victim") != std::string::npos);
        return static_cast<int>(error.code());
    }
    return -1;
}

constexpr int k_usage = static_cast<int>(ExitCode::usage);

} // namespace

TEST_SUITE("PathResolver") {
    TEST_CASE("RECORD paths resolve inside the venv or are refused") {
        TempDir tmp;
        INFO("temp dir: " << tmp.path().string());
        stdfs::path venv = make_venv(tmp.path());
        auto layout = read_layout(venv);
        REQUIRE(layout.site_packages.size() == 1);
        const stdfs::path site = layout.site_packages.front();
        CHECK(site == layout.root / k_site);
        PathResolver resolver(layout, layout.root / ".venvtx");

        SUBCASE("relative paths become venv-relative") {
            CHECK(resolver.resolve(site, "pkg/mod.py", "victim") == std::optional<std::string>(k_site + "/pkg/mod.py"));
            CHECK(resolver.resolve(site, "pkg/not-yet.py", "victim") ==
                  std::optional<std::string>(k_site + "/pkg/not-yet.py"));
            CHECK(resolver.resolve(site, "pkg/./sub/../mod.py", "victim") ==
                  std::optional<std::string>(k_site + "/pkg/mod.py"));
            // Not plain (an empty component): joined the long way, to the same answer.
            CHECK(resolver.resolve(site, "pkg//mod.py", "victim") == std::optional<std::string>(k_site + "/pkg/mod.py"));
        }

        SUBCASE("a path that names no file is refused") {
            CHECK(error_code_of(resolver, site, "pkg/") == k_usage);
            CHECK(error_code_of(resolver, site, "pkg/.") == k_usage);
        }

        SUBCASE("'..' that stays inside the venv is fine") {
            CHECK(resolver.resolve(site, "../../../bin/x", "victim") == std::optional<std::string>("bin/x"));
            CHECK(resolver.resolve(site, "../../../bin/tool", "victim") == std::optional<std::string>("bin/tool"));
        }

        SUBCASE("directories are canonicalized, a final symlink is not followed") {
            CHECK(resolver.resolve(site, (layout.root / "lib64/python3.11/site-packages/pkg/mod.py").string(),
                                   "victim") == std::optional<std::string>(k_site + "/pkg/mod.py"));
            CHECK(resolver.resolve(site, "pkg/link", "victim") == std::optional<std::string>(k_site + "/pkg/link"));
        }

        SUBCASE("absolute paths inside the venv are accepted") {
            CHECK(resolver.resolve(site, (layout.root / "bin/x").string(), "victim") ==
                  std::optional<std::string>("bin/x"));
        }

        SUBCASE("escapes are usage errors") {
            CHECK(error_code_of(resolver, site, "../../../../tmp/canary") == k_usage);
            CHECK(error_code_of(resolver, site, "../../../../outside/canary") == k_usage);
            CHECK(error_code_of(resolver, site, (tmp.path() / "outside/canary").string()) == k_usage);
            CHECK(error_code_of(resolver, site, "/tmp/canary") == k_usage);
            CHECK(error_code_of(resolver, site, "escape/canary") == k_usage);
            CHECK(error_code_of(resolver, site, "../../..") == k_usage);
            CHECK(error_code_of(resolver, site, "pkg/..") == k_usage);
        }

        SUBCASE("the store is off limits") {
            CHECK(error_code_of(resolver, site, "../../../.venvtx/objects/ab/cdef") == k_usage);
            CHECK(error_code_of(resolver, site, "../../../.venvtx") == k_usage);
            CHECK(error_code_of(resolver, site, (layout.root / ".venvtx/index.db").string()) == k_usage);
        }

        SUBCASE("a missing parent directory gives nullopt") {
            CHECK_FALSE(resolver.resolve(site, "nopkg/mod.py", "victim").has_value());
            CHECK_FALSE(resolver.resolve(site, "pkg/deeper/still/mod.py", "victim").has_value());
        }

        CHECK(stdfs::exists(tmp.path() / "outside/canary"));
    }
}
