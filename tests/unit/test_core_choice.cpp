// choice_from: a flag's word to its enum, and the one-line usage error that lists the words.
#include "venvtx/core/choice.hpp"

#include <doctest/doctest.h>

namespace {

enum class Colour { red, green, blue };

Colour colour(const std::string& text) {
    return venvtx::choice_from<Colour>("--colour", text,
                                       {{"red", Colour::red}, {"green", Colour::green}, {"blue", Colour::blue}});
}

} // namespace

TEST_SUITE("choice_from") {
    TEST_CASE("each word gives its own value") {
        CHECK(colour("red") == Colour::red);
        CHECK(colour("green") == Colour::green);
        CHECK(colour("blue") == Colour::blue);
    }

    TEST_CASE("any other word is a usage error naming every word") {
        try {
            colour("Red");
            FAIL("no error for 'Red'");
        } catch (const venvtx::Error& error) {
            CHECK(error.code() == venvtx::ExitCode::usage);
            CHECK(std::string(error.what()) == "--colour takes red, green or blue, not 'Red'");
        }
    }

    TEST_CASE("two words read 'a or b'") {
        try {
            venvtx::choice_from<bool>("--flag", "", {{"yes", true}, {"no", false}});
            FAIL("no error for ''");
        } catch (const venvtx::Error& error) {
            CHECK(std::string(error.what()) == "--flag takes yes or no, not ''");
        }
    }
}
