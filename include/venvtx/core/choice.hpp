// A flag's word turned into its enum: "--preview takes auto, always or never, not 'x'" for any other.
#pragma once

#include "venvtx/core/error.hpp"

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace venvtx {

template <typename Enum>
Enum choice_from(std::string_view flag, const std::string& text,
                 std::initializer_list<std::pair<std::string_view, Enum>> words) {
    std::string listed;
    std::size_t index = 0;
    for (const auto& [word, value] : words) {
        if (word == text) {
            return value;
        }
        listed += (index == 0 ? "" : index + 1 == words.size() ? " or " : ", ") + std::string(word);
        ++index;
    }
    throw usage_error(std::string(flag) + " takes " + listed + ", not '" + text + "'");
}

} // namespace venvtx
