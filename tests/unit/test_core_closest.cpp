#include "venvtx/core/closest.hpp"

#include <doctest/doctest.h>

using venvtx::closest;

TEST_SUITE("closest") {
    TEST_CASE("a near candidate, the nearest first") {
        std::vector<std::string> commands = {"remove", "rollback", "recover", "log", "show"};
        CHECK(closest("remve", commands) == std::optional<std::string>("remove"));
        CHECK(closest("rollbak", commands) == std::optional<std::string>("rollback"));
        CHECK(closest("lgo", commands) == std::optional<std::string>("log"));
        CHECK(closest("sglng", {"sglang", "flash-attn"}) == std::optional<std::string>("sglang"));
    }

    TEST_CASE("nothing near, or the word itself") {
        CHECK_FALSE(closest("frobnicate", {"remove", "rollback"}).has_value());
        CHECK_FALSE(closest("ab", {"xy"}).has_value());
        CHECK_FALSE(closest("log", {"log", "lag"}).has_value());
        CHECK_FALSE(closest("x", {}).has_value());
    }
}
