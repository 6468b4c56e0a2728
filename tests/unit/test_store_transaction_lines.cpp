// Unit tests for transaction_lines: what `log` lists, read with its own narrow queries, against
// what History::list reads in full.
#include "temp_dir.hpp"

#include "venvtx/store/database.hpp"
#include "venvtx/store/history.hpp"
#include "venvtx/store/transaction_lines.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace venvtx;
using venvtx::test::TempDir;

namespace {

std::vector<std::string> names_of(const std::vector<PackageChange>& packages) {
    std::vector<std::string> names;
    for (const auto& change : packages) {
        names.push_back(change.name);
    }
    return names;
}

std::int64_t journal(History& history, const std::string& kind, const std::vector<std::string>& names,
                     std::optional<std::int64_t> undoes = std::nullopt) {
    std::vector<PackageChange> packages;
    for (const auto& name : names) {
        packages.push_back({name, "1.0", std::nullopt});
    }
    std::vector<Entry> entries;
    return history.begin(kind, nlohmann::json::array({"venvtx", kind}), packages, entries, undoes);
}

} // namespace

TEST_SUITE("transaction_lines") {
    TEST_CASE("newest first, each with its packages in recorded order and its links, as History::list") {
        TempDir tmp;
        Database db(tmp.path() / "index.db");
        History history(db);
        CHECK(transaction_lines(db, std::nullopt).empty());

        auto first = journal(history, "remove", {"zeta", "alpha", "mid"}); // not alphabetical
        history.commit(first, std::nullopt);
        auto second = journal(history, "install", {});
        auto undo = journal(history, "rollback", {"zeta", "alpha", "mid"}, first);
        history.commit(undo, first);
        auto fourth = journal(history, "remove", {"beta"});

        auto lines = transaction_lines(db, std::nullopt);
        auto records = history.list(std::nullopt);
        REQUIRE(lines.size() == 4);
        REQUIRE(records.size() == 4);
        CHECK(lines[0].id == fourth);
        CHECK(lines[1].id == undo);
        CHECK(lines[2].id == second);
        CHECK(lines[3].id == first);
        CHECK(names_of(lines[3].packages) == std::vector<std::string>{"zeta", "alpha", "mid"});
        CHECK(lines[3].undone_by == undo);
        CHECK(lines[1].undoes == first);
        CHECK(lines[2].packages.empty());
        for (std::size_t i = 0; i < lines.size(); ++i) {
            CAPTURE(i);
            CHECK(lines[i].id == records[i].id);
            CHECK(lines[i].kind == records[i].kind);
            CHECK(lines[i].state == records[i].state);
            CHECK(lines[i].started_at == records[i].started_at);
            CHECK(lines[i].undoes == records[i].undoes);
            CHECK(lines[i].undone_by == records[i].undone_by);
            REQUIRE(lines[i].packages.size() == records[i].packages.size());
            for (std::size_t p = 0; p < lines[i].packages.size(); ++p) {
                CHECK(lines[i].packages[p].name == records[i].packages[p].name);
                CHECK(lines[i].packages[p].before == records[i].packages[p].before);
                CHECK(lines[i].packages[p].after == records[i].packages[p].after);
            }
        }

        auto newest = transaction_lines(db, 2);
        REQUIRE(newest.size() == 2);
        CHECK(newest[0].id == fourth);
        CHECK(names_of(newest[0].packages) == std::vector<std::string>{"beta"});
        CHECK(newest[1].id == undo);
        CHECK(names_of(newest[1].packages) == std::vector<std::string>{"zeta", "alpha", "mid"});
    }
}
