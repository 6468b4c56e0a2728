// TxState: names as stored in the index.
#include "venvtx/store/transaction_state.hpp"

#include <array>
#include <utility>

namespace venvtx {

namespace {

constexpr std::array<std::pair<TxState, const char*>, 9> k_names = {{
    {TxState::started, "started"},
    {TxState::applied, "applied"},
    {TxState::committed, "committed"},
    {TxState::rolled_back, "rolled_back"},
    {TxState::undone, "undone"},
    {TxState::aborted, "aborted"},
    {TxState::interrupted, "interrupted"},
    {TxState::pruned, "pruned"},
    {TxState::recorded, "recorded"},
}};

} // namespace

const char* to_string(TxState state) {
    for (const auto& [value, name] : k_names) {
        if (value == state) {
            return name;
        }
    }
    return "interrupted";
}

std::optional<TxState> tx_state_from(const std::string& text) {
    for (const auto& [value, name] : k_names) {
        if (text == name) {
            return value;
        }
    }
    return std::nullopt;
}

} // namespace venvtx
