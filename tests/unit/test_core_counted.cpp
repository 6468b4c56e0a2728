#include "venvtx/core/output.hpp"

#include <doctest/doctest.h>

using venvtx::counted;

TEST_SUITE("counted") {
    TEST_CASE("one is singular, any other count plural") {
        CHECK(counted(1, "file") == "1 file");
        CHECK(counted(0, "file") == "0 files");
        CHECK(counted(37, "file") == "37 files");
        CHECK(counted(1, "distribution") == "1 distribution");
        CHECK(counted(4, "distribution") == "4 distributions");
    }

    TEST_CASE("English endings") {
        CHECK(counted(2, "process") == "2 processes");
        CHECK(counted(3, "directory") == "3 directories");
        CHECK(counted(2, "key") == "2 keys");
        CHECK(counted(2, "GPU") == "2 GPUs");
        CHECK(counted(1, "directory") == "1 directory");
    }
}
