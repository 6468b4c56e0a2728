// largest_passing_subset: singles, then the survivors together, then their subsets.
#include "venvtx/ops/subset_search.hpp"

#include <algorithm>

namespace venvtx {

namespace {

constexpr std::size_t k_exhaustive_limit = 8;

using Set = std::vector<std::string>;

bool includes_set(const Set& big, const Set& small) {
    return std::includes(big.begin(), big.end(), small.begin(), small.end());
}

class Search {
public:
    Search(const TrialRunner& run, const std::function<int(const std::string&)>& risk, std::size_t batch)
        : m_run(run), m_risk(risk), m_batch(std::max<std::size_t>(batch, 1)) {}

    SubsetSearch find(Set names, const Trial& whole) {
        std::sort(names.begin(), names.end());
        record(whole);
        if (whole.passed) {
            m_result.removed = names;
            return finish(names);
        }
        Set survivors;
        if (names.size() == 1) {
            return finish(names);
        }
        std::vector<Set> singles;
        for (const auto& name : names) {
            singles.push_back({name});
        }
        for (const Trial& trial : run_all(singles)) {
            if (trial.passed) {
                survivors.push_back(trial.removed.front());
            }
        }
        if (survivors.size() <= 1) {
            m_result.removed = survivors;
            return finish(names);
        }
        if (!known_to_fail(survivors) && run_all({survivors}).front().passed) {
            m_result.removed = survivors;
            return finish(names);
        }
        if (survivors.size() > k_exhaustive_limit) {
            m_result.exact = false;
            m_result.removed = greedy(survivors);
        } else {
            m_result.removed = exhaustive(survivors);
        }
        return finish(names);
    }

private:
    // Largest first; within a size, the least risky first; a set holding a failed one is skipped.
    Set exhaustive(const Set& survivors) {
        for (std::size_t size = survivors.size() - 1; size >= 2; --size) {
            std::vector<Set> level = subsets_of_size(survivors, size);
            std::stable_sort(level.begin(), level.end(),
                             [&](const Set& a, const Set& b) { return risk_of(a) < risk_of(b); });
            for (std::size_t start = 0; start < level.size();) {
                std::vector<Set> chunk;
                for (; start < level.size() && chunk.size() < m_batch; ++start) {
                    if (!known_to_fail(level[start])) {
                        chunk.push_back(level[start]);
                    }
                }
                for (const Trial& trial : run_all(chunk)) { // one batch: stop at the first that passes
                    if (trial.passed) {
                        return trial.removed;
                    }
                }
            }
        }
        return least_risky_single(survivors);
    }

    // Adds survivors one at a time, the least risky first, keeping each whose addition still
    // passes: a set no single survivor can join (maximal, not always the largest).
    Set greedy(Set survivors) {
        std::stable_sort(survivors.begin(), survivors.end(),
                         [&](const auto& a, const auto& b) { return m_risk(a) < m_risk(b); });
        Set current = {survivors.front()}; // passed on its own
        for (std::size_t i = 1; i < survivors.size(); ++i) {
            Set with = current;
            with.insert(std::upper_bound(with.begin(), with.end(), survivors[i]), survivors[i]);
            if (run_all({with}).front().passed) {
                current = with;
            }
        }
        return current;
    }

    Set least_risky_single(const Set& survivors) {
        return {*std::min_element(survivors.begin(), survivors.end(),
                                  [&](const auto& a, const auto& b) { return m_risk(a) < m_risk(b); })};
    }

    static std::vector<Set> subsets_of_size(const Set& from, std::size_t size) {
        std::vector<Set> subsets;
        std::vector<bool> pick(from.size(), false);
        std::fill(pick.begin(), pick.begin() + static_cast<std::ptrdiff_t>(size), true);
        do {
            Set subset;
            for (std::size_t i = 0; i < from.size(); ++i) {
                if (pick[i]) {
                    subset.push_back(from[i]);
                }
            }
            subsets.push_back(std::move(subset));
        } while (std::prev_permutation(pick.begin(), pick.end()));
        return subsets;
    }

    int risk_of(const Set& set) const {
        int total = 0;
        for (const auto& name : set) {
            total += m_risk(name);
        }
        return total;
    }

    bool known_to_fail(const Set& set) const {
        return std::any_of(m_failed.begin(), m_failed.end(), [&](const Set& failed) { return includes_set(set, failed); });
    }

    // At most `batch` sets at a time (previews side by side).
    std::vector<Trial> run_all(const std::vector<Set>& sets) {
        std::vector<Trial> all;
        for (std::size_t start = 0; start < sets.size(); start += m_batch) {
            std::vector<Set> chunk(sets.begin() + static_cast<std::ptrdiff_t>(start),
                                   sets.begin() + static_cast<std::ptrdiff_t>(std::min(sets.size(), start + m_batch)));
            for (auto& trial : m_run(chunk)) {
                std::sort(trial.removed.begin(), trial.removed.end());
                record(trial);
                all.push_back(std::move(trial));
            }
        }
        return all;
    }

    void record(const Trial& trial) {
        m_result.trials.push_back(trial);
        if (!trial.passed) {
            m_failed.push_back(trial.removed);
        }
    }

    // Each name not removed is kept because of a failed trial holding it and nothing else that
    // is not removed: the smallest such trial (its own single when that failed).
    SubsetSearch finish(const Set& names) {
        std::sort(m_result.removed.begin(), m_result.removed.end());
        for (const auto& name : names) {
            if (std::binary_search(m_result.removed.begin(), m_result.removed.end(), name)) {
                continue;
            }
            Set with = m_result.removed;
            with.insert(std::upper_bound(with.begin(), with.end(), name), name);
            const Trial* proof = nullptr;
            for (const auto& trial : m_result.trials) {
                bool holds = std::binary_search(trial.removed.begin(), trial.removed.end(), name);
                if (!trial.passed && holds && includes_set(with, trial.removed) &&
                    (!proof || trial.removed.size() < proof->removed.size())) {
                    proof = &trial;
                }
            }
            m_result.kept[name] = proof ? *proof : m_result.trials.front();
        }
        return std::move(m_result);
    }

    const TrialRunner& m_run;
    const std::function<int(const std::string&)>& m_risk;
    std::size_t m_batch;
    std::vector<Set> m_failed;
    SubsetSearch m_result;
};

} // namespace

SubsetSearch largest_passing_subset(std::vector<std::string> names, const Trial& whole, const TrialRunner& run,
                                    const std::function<int(const std::string&)>& risk, std::size_t batch) {
    return Search(run, risk, batch).find(std::move(names), whole);
}

} // namespace venvtx
