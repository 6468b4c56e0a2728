// json_text: nlohmann's own layout for UTF-8, and PEP 383 escapes for bytes that are not UTF-8.
#include "venvtx/core/json_text.hpp"

#include <doctest/doctest.h>

using venvtx::json_text;
using venvtx::stored_json_text;

TEST_SUITE("json_text") {
    TEST_CASE("a UTF-8 document reads as nlohmann writes it") {
        nlohmann::json document = {{"name", "caf\xc3\xa9 \xf0\x9f\x90\x8d"},
                                   {"quote", "a \"b\" \\ c\n\t\r\b\f\x01"},
                                   {"list", {1, 2.5, true, nullptr, "x"}},
                                   {"empty_list", nlohmann::json::array()},
                                   {"empty_object", nlohmann::json::object()},
                                   {"nested", {{"a", {{"b", -3}}}}}};
        CHECK(json_text(document) == document.dump(2));
        CHECK(json_text(document, -1) == document.dump());
    }

    TEST_CASE("each byte that is not UTF-8 becomes \\udcXX") {
        CHECK(json_text(std::string("caf\xe9")) == "\"caf\\udce9\"");
        CHECK(json_text(std::string("\xff\xfe")) == "\"\\udcff\\udcfe\"");
        // An overlong '/', an encoded surrogate, a code point above U+10FFFF, a cut sequence.
        CHECK(json_text(std::string("\xc0\xaf")) == "\"\\udcc0\\udcaf\"");
        CHECK(json_text(std::string("\xed\xa0\x80")) == "\"\\udced\\udca0\\udc80\"");
        CHECK(json_text(std::string("\xf4\x90\x80\x80")) == "\"\\udcf4\\udc90\\udc80\\udc80\"");
        CHECK(json_text(std::string("ok\xe2\x82")) == "\"ok\\udce2\\udc82\"");
    }

    TEST_CASE("keys are escaped the same way, and nothing throws") {
        nlohmann::json document = {{std::string("k\xe9y"), std::string("v\xe9")}};
        CHECK(json_text(document, -1) == "{\"k\\udce9y\":\"v\\udce9\"}");
        CHECK_THROWS(document.dump()); // what json_text replaces
    }

    TEST_CASE("stored text replaces such bytes and parses again") {
        std::string text = stored_json_text({{"error", std::string("caf\xe9")}});
        CHECK(nlohmann::json::parse(text)["error"] == "caf\xef\xbf\xbd");
    }
}
