// largest_passing_subset against dependency shapes whose answer is known: the search must find
// the largest passing set with the probes it claims, and prove every kept name by a failed trial.
#include "venvtx/ops/subset_search.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <set>

using venvtx::largest_passing_subset;
using venvtx::Trial;

namespace {

using Set = std::vector<std::string>;
using Passes = std::function<bool(const std::set<std::string>&)>;  // removing this set passes

struct Oracle {
    Passes passes;
    int probes = 0;
    std::size_t widest_batch = 0;

    std::vector<Trial> operator()(const std::vector<Set>& sets) {
        widest_batch = std::max(widest_batch, sets.size());
        std::vector<Trial> trials;
        for (const auto& set : sets) {
            ++probes;
            bool ok = passes({set.begin(), set.end()});
            trials.push_back({set, ok, ok ? "" : "failed without " + std::to_string(set.size())});
        }
        return trials;
    }
};

venvtx::SubsetSearch search(const Set& names, Oracle& oracle, std::size_t batch = 4) {
    Trial whole{names, oracle.passes({names.begin(), names.end()}), "whole"};
    std::sort(whole.removed.begin(), whole.removed.end());
    return largest_passing_subset(
        names, whole, [&](const std::vector<Set>& sets) { return oracle(sets); },
        [](const std::string& name) { return name.rfind("risky", 0) == 0 ? 10 : 0; }, batch);
}

bool holds(const std::set<std::string>& removed, const char* name) { return removed.count(name) != 0; }

// Every kept name is proved by a failed trial that holds it and nothing else that was kept.
void check_proofs(const venvtx::SubsetSearch& found) {
    for (const auto& [name, proof] : found.kept) {
        CHECK_FALSE(proof.passed);
        CHECK(std::count(proof.removed.begin(), proof.removed.end(), name) == 1);
        for (const auto& other : proof.removed) {
            bool removed = std::count(found.removed.begin(), found.removed.end(), other) == 1;
            CHECK((other == name || removed));
        }
    }
}

} // namespace

TEST_SUITE("subset_search") {
    TEST_CASE("the whole set passes: one probe, nothing kept") {
        Oracle oracle{[](const auto&) { return true; }};
        auto found = search({"a", "b", "c"}, oracle);
        CHECK(found.removed == Set{"a", "b", "c"});
        CHECK(found.kept.empty());
        CHECK(oracle.probes == 0);  // the whole set's trial was the caller's
    }

    TEST_CASE("one needed: it alone is kept, the rest removed together") {
        Oracle oracle{[](const auto& removed) { return !holds(removed, "alpha"); }};
        auto found = search({"alpha", "beta", "gamma"}, oracle);
        CHECK(found.removed == Set{"beta", "gamma"});
        REQUIRE(found.kept.count("alpha") == 1);
        CHECK(found.kept.at("alpha").removed == Set{"alpha"});
        CHECK(oracle.probes == 3 + 1);  // the singles, then the survivors together
        CHECK(oracle.widest_batch == 3);     // the singles ran side by side
        check_proofs(found);
    }

    TEST_CASE("one needed only through another: both kept") {
        // the probe imports alpha; alpha imports beta
        Oracle oracle{[](const auto& removed) { return !holds(removed, "alpha") && !holds(removed, "beta"); }};
        auto found = search({"alpha", "beta", "gamma", "delta"}, oracle);
        CHECK(found.removed == Set{"delta", "gamma"});
        CHECK(found.kept.size() == 2);
        check_proofs(found);
    }

    TEST_CASE("two alternatives: either may go, not both; the less risky goes") {
        // a library provided by two distributions: removing one is fine, removing both is not
        Oracle oracle{[](const auto& removed) { return !(holds(removed, "risky-x") && holds(removed, "y")); }};
        auto found = search({"risky-x", "y", "z"}, oracle);
        CHECK(found.removed.size() == 2);
        CHECK(found.removed == Set{"y", "z"});
        REQUIRE(found.kept.count("risky-x") == 1);
        CHECK(found.kept.at("risky-x").removed == Set{"risky-x", "y"});
        check_proofs(found);
    }

    TEST_CASE("nothing can go: every name kept by its own failed single") {
        Oracle oracle{[](const auto& removed) { return removed.empty(); }};
        auto found = search({"a", "b"}, oracle);
        CHECK(found.removed.empty());
        CHECK(found.kept.size() == 2);
        CHECK(found.kept.at("a").removed == Set{"a"});
        check_proofs(found);
    }

    TEST_CASE("one name that fails: kept by the whole trial, no more probes") {
        Oracle oracle{[](const auto& removed) { return removed.empty(); }};
        auto found = search({"a"}, oracle);
        CHECK(found.removed.empty());
        CHECK(found.kept.at("a").error == "whole");
        CHECK(oracle.probes == 0);
    }

    TEST_CASE("exhaustive up to 8: the largest set under pairwise conflicts is found") {
        // conflicts a-b, c-d, e-f: the largest passing set keeps one of each pair (size 5 of 8)
        auto conflict = [](const std::set<std::string>& r, const char* x, const char* y) {
            return holds(r, x) && holds(r, y);
        };
        Oracle oracle{[&](const auto& r) {
            return !conflict(r, "a", "b") && !conflict(r, "c", "d") && !conflict(r, "e", "f");
        }};
        auto found = search({"a", "b", "c", "d", "e", "f", "g", "h"}, oracle, 2);
        CHECK(found.exact);
        CHECK(found.removed.size() == 5);
        CHECK(oracle.passes({found.removed.begin(), found.removed.end()}));
        CHECK(oracle.widest_batch <= 8);
        check_proofs(found);
    }

    TEST_CASE("singles run at most `batch` at a time") {
        Oracle oracle{[](const auto& removed) { return !holds(removed, "a"); }};
        auto found = search({"a", "b", "c", "d", "e"}, oracle, 2);
        CHECK(found.removed == Set{"b", "c", "d", "e"});
        CHECK(oracle.widest_batch == 2);
    }

    TEST_CASE("more than 8 interacting names: greedy, and said to be") {
        Set names;
        for (char c = 'a'; c <= 'j'; ++c) {
            names.push_back(std::string(1, c));
        }
        Oracle oracle{[](const auto& r) { return r.size() <= 7; }};
        auto found = search(names, oracle);
        CHECK_FALSE(found.exact);
        CHECK(found.removed.size() == 7);
        check_proofs(found);
    }

    TEST_CASE("greedy beyond 8 still finds a set no single name can join") {
        // two alternatives among ten unrelated names: only x1 and x2 together fail
        Set names = {"x1", "x2"};
        for (char c = 'a'; c <= 'i'; ++c) {
            names.push_back(std::string("n") + c);
        }
        Oracle oracle{[](const auto& r) { return !(holds(r, "x1") && holds(r, "x2")); }};
        auto found = search(names, oracle);
        CHECK_FALSE(found.exact);
        CHECK(found.removed.size() == names.size() - 1);
        check_proofs(found);
    }
}
