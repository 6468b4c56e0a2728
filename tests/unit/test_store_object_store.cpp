// ObjectStore: adoption (new, existing, healing a rotten copy) and verification.
#include "temp_dir.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/core/sha256.hpp"
#include "venvtx/store/object_store.hpp"

#include <doctest/doctest.h>
#include <fstream>
#include <sstream>

using venvtx::ObjectStore;
using venvtx::test::TempDir;
using venvtx::test::write_file;

namespace {

std::string read_all(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

} // namespace

TEST_SUITE("ObjectStore") {
    TEST_CASE("adopt names a file by its hash and reports whether it was new") {
        TempDir dir;
        ObjectStore objects(dir.path());
        std::string hex = venvtx::sha256_hex("payload");
        write_file(dir.path() / "staged1", "payload");
        CHECK(objects.adopt(dir.path() / "staged1", hex));
        CHECK(objects.has(hex));
        CHECK(read_all(objects.object_path(hex)) == "payload");
        CHECK_FALSE(std::filesystem::exists(dir.path() / "staged1"));
        write_file(dir.path() / "staged2", "payload");
        CHECK_FALSE(objects.adopt(dir.path() / "staged2", hex));
        CHECK_FALSE(std::filesystem::exists(dir.path() / "staged2"));
        CHECK_NOTHROW(objects.verify(hex));
    }

    TEST_CASE("verify names a corrupted or missing object; a fresh capture heals it") {
        TempDir dir;
        ObjectStore objects(dir.path());
        std::string hex = venvtx::sha256_hex("good bytes");
        write_file(dir.path() / "staged", "good bytes");
        objects.adopt(dir.path() / "staged", hex);
        write_file(objects.object_path(hex), "rotten!!!!");
        try {
            objects.verify(hex);
            FAIL("a corrupted object verified");
        } catch (const venvtx::Error& error) {
            CHECK(error.code() == venvtx::ExitCode::verify_failed);
            CHECK(std::string(error.what()).find("corrupted") != std::string::npos);
        }
        write_file(dir.path() / "again", "good bytes");
        objects.adopt(dir.path() / "again", hex);
        CHECK_NOTHROW(objects.verify(hex));
        std::filesystem::remove(objects.object_path(hex));
        CHECK_FALSE(objects.has(hex));
        CHECK_THROWS_AS(objects.verify(hex), venvtx::Error);
    }

    TEST_CASE("a malformed object name is no object") {
        TempDir dir;
        ObjectStore objects(dir.path());
        CHECK_FALSE(objects.has(""));
        CHECK_THROWS_AS(objects.object_path("abc"), venvtx::Error);
    }
}
