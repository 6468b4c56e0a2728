// Unit tests for the SQLite index: migrations and the History round-trip of entries.
#include "temp_dir.hpp"

#include "venvtx/store/database.hpp"
#include "venvtx/store/history.hpp"
#include "venvtx/store/migrations.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace venvtx;
using venvtx::test::TempDir;

namespace {

void check_same_state(const NodeState& got, const NodeState& want) {
    CHECK(got.type == want.type);
    CHECK(got.mode == want.mode);
    CHECK(got.size == want.size);
    CHECK(got.mtime_ns == want.mtime_ns);
    CHECK(got.link_target == want.link_target);
    CHECK(got.object == want.object);
}

NodeState state(NodeType type, mode_t mode, std::uint64_t size, std::int64_t mtime_ns,
                std::string link = {}, std::string object = {}) {
    NodeState s;
    s.type = type;
    s.mode = mode;
    s.size = size;
    s.mtime_ns = mtime_ns;
    s.link_target = std::move(link);
    s.object = std::move(object);
    return s;
}

} // namespace

TEST_SUITE("Database") {
    TEST_CASE("migrations are applied once") {
        TempDir tmp;
        INFO("temp dir: " << tmp.path().string());
        REQUIRE_FALSE(k_migrations.empty());
        const auto path = tmp.path() / "index.db";
        std::string first_applied_at;
        {
            Database db(path);
            CHECK(db.schema_version() == k_migrations.back().version);
            auto rows = db.prepare("SELECT COUNT(*), MIN(applied_at) FROM schema_version");
            REQUIRE(rows.step());
            CHECK(rows.integer(0) == static_cast<std::int64_t>(k_migrations.size()));
            first_applied_at = rows.text(1);
            db.exec("INSERT INTO transactions (kind, state, started_at, argv) VALUES "
                    "('run', 'committed', 'then', '[]')");
        }
        Database again(path);
        CHECK(again.schema_version() == k_migrations.back().version);
        auto rows = again.prepare("SELECT COUNT(*), MIN(applied_at) FROM schema_version");
        REQUIRE(rows.step());
        CHECK(rows.integer(0) == static_cast<std::int64_t>(k_migrations.size()));
        CHECK(rows.text(1) == first_applied_at);
        auto kept = again.prepare("SELECT COUNT(*) FROM transactions");
        REQUIRE(kept.step());
        CHECK(kept.integer(0) == 1);
    }

    TEST_CASE("migration versions increase") {
        for (size_t i = 1; i < k_migrations.size(); ++i) {
            CHECK(k_migrations[i - 1].version < k_migrations[i].version);
        }
    }
}

TEST_SUITE("History") {
    TEST_CASE("begin and entries round-trip a file, a symlink and a directory") {
        TempDir tmp;
        INFO("temp dir: " << tmp.path().string());
        Database db(tmp.path() / "index.db");
        History history(db);

        const std::string hex = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        std::vector<Entry> entries(3);
        entries[0].path = "lib/python3.11/site-packages/pkg/lib.so";
        entries[0].before = state(NodeType::file, 04755, 493000000, 1732899723123456789, {}, hex);
        entries[1].path = "lib/python3.11/site-packages/pkg/libfoo.so.1";
        entries[1].before = state(NodeType::symlink, 0777, 13, -5, "libfoo.so.1.2.3");
        entries[2].path = "lib/python3.11/site-packages/pkg";
        entries[2].before = state(NodeType::dir, 0750, 0, 1000000001);
        entries[2].progress = venvtx::EntryProgress::captured;
        const std::vector<PackageChange> packages = {{"pkg", "1.0", std::nullopt}};
        const nlohmann::json argv = {"venvtx", "remove", "pkg"};

        auto tx = history.begin("remove", argv, packages, entries);
        CHECK(tx > 0);
        CHECK(entries[0].id > 0);
        CHECK(entries[0].id != entries[1].id);
        CHECK(entries[1].id != entries[2].id);

        auto got = history.entries(tx);
        REQUIRE(got.size() == entries.size());
        for (size_t i = 0; i < got.size(); ++i) {
            CAPTURE(i);
            CHECK(got[i].id == entries[i].id);
            CHECK(got[i].path == entries[i].path);
            CHECK(got[i].progress == entries[i].progress);
            check_same_state(got[i].before, entries[i].before);
            check_same_state(got[i].after, entries[i].after);
        }

        auto record = history.find(tx);
        REQUIRE(record.has_value());
        CHECK(record->kind == "remove");
        CHECK(record->state == venvtx::TxState::started);
        CHECK(record->argv == argv);
        REQUIRE(record->packages.size() == 1);
        CHECK(record->packages[0].name == "pkg");
        CHECK(record->packages[0].before == std::optional<std::string>("1.0"));
        CHECK_FALSE(record->packages[0].after.has_value());
        CHECK(record->files.removed == 2);
        CHECK(history.entries(tx + 1).empty());
    }
}
