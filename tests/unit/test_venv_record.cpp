// Unit tests for the RECORD reader: quoting, line endings, malformed and torn input.
#include "venvtx/core/error.hpp"
#include "venvtx/venv/record.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using venvtx::Error;
using venvtx::ExitCode;
using venvtx::parse_record;
using venvtx::RecordEntry;

namespace {

constexpr int k_no_error = -1;

// The exit code of the Error parse_record throws for `text`, or k_no_error when it parses.
int error_code_of(const std::string& text) {
    try {
        parse_record(text, "RECORD");
    } catch (const Error& error) {
        return static_cast<int>(error.code());
    }
    return k_no_error;
}

constexpr int k_usage = static_cast<int>(ExitCode::usage);

} // namespace

TEST_SUITE("parse_record") {
    TEST_CASE("plain rows") {
        auto entries = parse_record("pkg/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,12\npkg-1.0.dist-info/RECORD,,\n", "R");
        REQUIRE(entries.size() == 2);
        CHECK(entries[0].path == "pkg/__init__.py");
        CHECK(entries[0].hash == "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
        REQUIRE(entries[0].size.has_value());
        CHECK(*entries[0].size == 12);
        CHECK(entries[1].path == "pkg-1.0.dist-info/RECORD");
        CHECK(entries[1].hash.empty());
        CHECK_FALSE(entries[1].size.has_value());
    }

    TEST_CASE("quoted fields keep commas, doubled quotes and newlines") {
        auto entries = parse_record("\"a,b.py\",sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,1\n\"say \"\"hi\"\".txt\",,\n\"two\nlines\",,3\n", "R");
        REQUIRE(entries.size() == 3);
        CHECK(entries[0].path == "a,b.py");
        CHECK(entries[1].path == "say \"hi\".txt");
        CHECK(entries[2].path == "two\nlines");
        CHECK(entries[2].size == std::optional<std::uint64_t>(3));
    }

    TEST_CASE("CRLF line endings are stripped") {
        auto entries = parse_record("a.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,5\r\nb.py,,\r\n", "R");
        REQUIRE(entries.size() == 2);
        CHECK(entries[0].path == "a.py");
        CHECK(entries[0].size == std::optional<std::uint64_t>(5));
        CHECK(entries[1].path == "b.py");
        CHECK_FALSE(entries[1].size.has_value());
    }

    TEST_CASE("paths are kept as written, '..' and absolute included") {
        auto entries = parse_record("../../../bin/tool,,\n/abs/path.so,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,7\n", "R");
        REQUIRE(entries.size() == 2);
        CHECK(entries[0].path == "../../../bin/tool");
        CHECK(entries[1].path == "/abs/path.so");
    }

    TEST_CASE("blank lines and a missing final newline are accepted") {
        CHECK(parse_record("a.py,,\n\n", "R").size() == 1);
        CHECK(parse_record("a.py,,\n\nb.py,,", "R").size() == 2);
        CHECK(parse_record("", "R").empty());
    }

    TEST_CASE("malformed input is a usage error naming source and line") {
        CHECK(error_code_of("a.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU\n") == k_usage);
        CHECK(error_code_of("a.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,1,extra\n") == k_usage);
        CHECK(error_code_of("a.py,,\n\"unterminated,,\n") == k_usage);
        CHECK(error_code_of("a.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,12a\n") == k_usage);
        CHECK(error_code_of("a.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,-1\n") == k_usage);
        CHECK(error_code_of("a.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,99999999999999999999999\n") == k_usage);
        CHECK(error_code_of("a.py,nohash,1\n") == k_usage);
        CHECK(error_code_of(",sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,1\n") == k_usage);
        CHECK(error_code_of("a.py,sha256=47DEQpj8HBSa-_TImW,1\n") == k_usage); // torn digest
        CHECK(error_code_of("a\"b.py,,\n") == k_usage);
        CHECK(error_code_of("\"a.py\"x,,\n") == k_usage);
        try {
            parse_record("ok.py,,\nbad.py,,x\n", "dist/RECORD");
            FAIL("no error for a bad size");
        } catch (const Error& error) {
            CHECK(std::string(error.what()).find("dist/RECORD:2") != std::string::npos);
        }
    }

    TEST_CASE("truncation at every byte never crashes or invents entries") {
        const std::vector<std::string> k_endings = {"\n", "\r\n"};
        for (const auto& eol : k_endings) {
            const std::string full = "pkg/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0" + eol +
                                     "\"pkg/we,ird \"\"q\"\".py\",sha256=ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0,3" + eol +
                                     "../../../bin/tool,sha256=ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0,1234" + eol +
                                     "pkg/data.bin,,9" + eol +
                                     "pkg-1.0.dist-info/RECORD,," + eol;
            const auto original = parse_record(full, "R");
            REQUIRE(original.size() == 5);
            for (size_t cut = 0; cut <= full.size(); ++cut) {
                const std::string prefix = full.substr(0, cut);
                CAPTURE(cut);
                CAPTURE(prefix);
                std::vector<RecordEntry> got;
                try {
                    got = parse_record(prefix, "R");
                } catch (const Error& error) {
                    CHECK(error.code() == ExitCode::usage);
                    continue;
                }
                REQUIRE(got.size() <= original.size());
                for (size_t i = 0; i < got.size(); ++i) {
                    CHECK(got[i].path == original[i].path);
                }
                // Rows whose line ending lies inside the prefix must come back exactly.
                size_t whole_lines = 0;
                for (size_t pos = 0; (pos = prefix.find('\n', pos)) != std::string::npos; ++pos) {
                    ++whole_lines;
                }
                REQUIRE(got.size() >= whole_lines);
                for (size_t i = 0; i < whole_lines; ++i) {
                    CHECK(got[i].hash == original[i].hash);
                    CHECK(got[i].size == original[i].size);
                }
            }
        }
    }
}
