// Unit tests for PEP 503 name normalization and glob matching on distribution names.
#include "venvtx/venv/names.hpp"

#include <doctest/doctest.h>

using venvtx::name_matches;
using venvtx::normalize_name;

TEST_SUITE("normalize_name") {
    TEST_CASE("lowercases and folds each separator to '-'") {
        CHECK(normalize_name("Foo.Bar__baz-") == "foo-bar-baz-");
        CHECK(normalize_name("Flash_Attn") == "flash-attn");
        CHECK(normalize_name("nvidia_cudnn_cu13") == "nvidia-cudnn-cu13");
    }

    TEST_CASE("a run of mixed separators becomes one '-'") {
        CHECK(normalize_name("a._-b") == "a-b");
        CHECK(normalize_name("--a__") == "-a-");
        CHECK(normalize_name("A...B___C---D") == "a-b-c-d");
    }

    TEST_CASE("already normalized names are unchanged") {
        CHECK(normalize_name("torch") == "torch");
        CHECK(normalize_name("nvidia-cudnn-cu13") == "nvidia-cudnn-cu13");
        CHECK(normalize_name("") == "");
    }
}

TEST_SUITE("name_matches") {
    TEST_CASE("globs match normalized names") {
        CHECK(name_matches("nvidia-*-cu13", "nvidia_cudnn_cu13"));
        CHECK(name_matches("nvidia-*-cu13", "NVIDIA.cusparselt.CU13"));
        CHECK(name_matches("Flash_Attn", "flash-attn"));
        CHECK(name_matches("flash-attn", "Flash_Attn"));
        CHECK(name_matches("torch?", "torchx"));
    }

    TEST_CASE("character classes") {
        CHECK(name_matches("pkg-[ab]", "pkg_a"));
        CHECK(name_matches("pkg-[ab]", "PKG.B"));
        CHECK_FALSE(name_matches("pkg-[ab]", "pkg-c"));
    }

    TEST_CASE("non-matches") {
        CHECK_FALSE(name_matches("nvidia-*-cu13", "nvidia-cudnn-cu12"));
        CHECK_FALSE(name_matches("nvidia-*-cu13", "torch"));
        CHECK_FALSE(name_matches("flash-attn", "flash-attn2"));
        CHECK_FALSE(name_matches("torch", "torchvision"));
        CHECK_FALSE(name_matches("torch?", "torch"));
    }
}
