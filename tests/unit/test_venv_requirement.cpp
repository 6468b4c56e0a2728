// parse_requirement and marker_holds: Requires-Dist lines as pip reads them for one interpreter.
#include "venvtx/venv/requirement.hpp"

#include <doctest/doctest.h>

using venvtx::marker_holds;
using venvtx::MarkerEnvironment;
using venvtx::parse_requirement;

TEST_SUITE("requirement") {
    TEST_CASE("names are normalized; extras, versions and markers are not part of them") {
        CHECK(parse_requirement("Flash_Attn[extra]>=2.0 ; python_version >= '3.9'")->name == "flash-attn");
        CHECK(parse_requirement("flash_attn[extra]>=2.0 ; python_version >= '3.9'")->marker == "python_version >= '3.9'");
        CHECK(parse_requirement("torch")->marker.empty());
        CHECK(parse_requirement("nvidia.cudnn.cu13 (>=9)")->name == "nvidia-cudnn-cu13");
        CHECK_FALSE(parse_requirement("  ; os_name == 'nt'"));
    }

    TEST_CASE("markers evaluated for a Python 3.11 venv on x86_64 Linux") {
        MarkerEnvironment env{"3.11.7", "x86_64"};
        CHECK(marker_holds("", env));
        CHECK(marker_holds("python_version >= \"3.9\"", env));
        CHECK_FALSE(marker_holds("python_version < '3.10'", env));
        CHECK(marker_holds("python_version > '3.9'", env));   // 3.11 > 3.9 as versions, not strings
        CHECK(marker_holds("python_full_version == '3.11.7'", env));
        CHECK(marker_holds("python_full_version ~= '3.11.0'", env));
        CHECK_FALSE(marker_holds("python_full_version ~= '3.10.0'", env));
        CHECK(marker_holds("sys_platform == 'linux' and platform_machine == 'x86_64'", env));
        CHECK_FALSE(marker_holds("sys_platform == 'win32' or platform_system == 'Darwin'", env));
        CHECK(marker_holds("(sys_platform == 'win32' or os_name == 'posix') and python_version >= '3'", env));
        CHECK(marker_holds("'linux' in sys_platform", env));
        CHECK_FALSE(marker_holds("platform_machine not in 'x86_64 aarch64'", env));
    }

    TEST_CASE("an extra is never selected: extra requirements do not count, as in pip check") {
        MarkerEnvironment env{"3.11.7", "x86_64"};
        CHECK_FALSE(marker_holds("extra == 'test'", env));
        CHECK_FALSE(marker_holds("python_version >= '3' and extra == \"dev\"", env));
        CHECK(marker_holds("extra != 'dev'", env));
    }

    TEST_CASE("what cannot be read or is not known counts as holding") {
        CHECK(marker_holds("python_version >= '3.9'", MarkerEnvironment{"", "x86_64"}));
        CHECK(marker_holds("this is not a marker", MarkerEnvironment{"3.11.7", "x86_64"}));
        CHECK(marker_holds("python_version >= '3.9' and unknown_var == 'x'", MarkerEnvironment{"3.11.7", "x86_64"}));
        CHECK_FALSE(marker_holds("python_version < '3' and unknown_var == 'x'", MarkerEnvironment{"3.11.7", "x86_64"}));
    }
}
