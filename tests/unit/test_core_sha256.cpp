// Unit tests for SHA-256 of strings and files, and RECORD's urlsafe base64 form.
#include "temp_dir.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/core/sha256.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

using venvtx::record_hash_from_hex;
using venvtx::sha256_file;
using venvtx::sha256_hex;
using venvtx::test::TempDir;
using venvtx::test::write_file;

namespace {

// FIPS 180-2 test vector for "abc".
const std::string k_abc_hex = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
// python3 -c "import hashlib,base64;print(base64.urlsafe_b64encode(hashlib.sha256(b'abc').digest()).rstrip(b'=').decode())"
const std::string k_abc_record = "sha256=ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0";
// The same command with b'' (sha256 of the empty string).
const std::string k_empty_record = "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU";

} // namespace

TEST_SUITE("sha256_hex") {
    TEST_CASE("known vectors") {
        CHECK(sha256_hex("abc") == k_abc_hex);
        CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
}

TEST_SUITE("sha256_file") {
    TEST_CASE("a file hashes like its content") {
        TempDir tmp;
        INFO("temp dir: " << tmp.path().string());
        std::string content;
        for (int i = 0; i < 300000; ++i) {
            content.push_back(static_cast<char>(i * 7 + i / 256));
        }
        write_file(tmp.path() / "blob", content);
        auto digest = sha256_file(tmp.path() / "blob");
        CHECK(digest.hex == sha256_hex(content));
        CHECK(digest.size == content.size());

        write_file(tmp.path() / "empty", "");
        CHECK(sha256_file(tmp.path() / "empty").hex == sha256_hex(""));
        CHECK(sha256_file(tmp.path() / "empty").size == 0);
    }

    TEST_CASE("a final symlink is not followed and a missing file is an Error") {
        TempDir tmp;
        INFO("temp dir: " << tmp.path().string());
        write_file(tmp.path() / "target", "abc");
        std::filesystem::create_symlink("target", tmp.path() / "link");
        CHECK_THROWS_AS(sha256_file(tmp.path() / "link"), venvtx::Error);
        CHECK_THROWS_AS(sha256_file(tmp.path() / "missing"), venvtx::Error);
    }
}

TEST_SUITE("record_hash_from_hex") {
    TEST_CASE("urlsafe base64 without padding") {
        CHECK(record_hash_from_hex(k_abc_hex) == k_abc_record);
        CHECK(record_hash_from_hex(sha256_hex("")) == k_empty_record);
        CHECK(record_hash_from_hex(k_abc_hex).find('=', 7) == std::string::npos);
    }

    TEST_CASE("short inputs pad correctly") {
        // base64.urlsafe_b64encode(b'\xfb\xff') == b'-_8=' ; b'\xfb' == b'-w=='
        CHECK(record_hash_from_hex("fbff") == "sha256=-_8");
        CHECK(record_hash_from_hex("fb") == "sha256=-w");
        CHECK(record_hash_from_hex("fbfffe") == "sha256=-__-");
    }
}

TEST_SUITE("hex_from_record_hash") {
    TEST_CASE("the inverse of record_hash_from_hex") {
        CHECK(venvtx::hex_from_record_hash(k_abc_record) == k_abc_hex);
        CHECK(venvtx::hex_from_record_hash(k_empty_record) == sha256_hex(""));
    }

    TEST_CASE("anything but a sha256 digest in RECORD's form names nothing") {
        std::string record(k_abc_record);
        CHECK(venvtx::hex_from_record_hash("").empty());
        CHECK(venvtx::hex_from_record_hash("sha1=" + record.substr(7)).empty());
        CHECK(venvtx::hex_from_record_hash(record.substr(0, record.size() - 1)).empty());  // 42 digits
        CHECK(venvtx::hex_from_record_hash(record + "A").empty());                          // 44 digits
        CHECK(venvtx::hex_from_record_hash(record.substr(0, 10) + "+" + record.substr(11)).empty());  // not urlsafe
    }
}
