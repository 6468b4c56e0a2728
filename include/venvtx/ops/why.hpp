// `venvtx why NAME`: for a soname, a file or a distribution — who provides it, who needs it,
// and what breaks without it.
#pragma once

#include "venvtx/txn/context.hpp"

#include <nlohmann/json.hpp>
#include <string>

namespace venvtx {

struct WhyAnswer {
    nlohmann::json json;   // {"kind": "soname"|"file"|"distribution", ...}
    std::string text;      // the same, for people
};

// Throws a usage Error when NAME is none of the three.
WhyAnswer explain(const Context& context, const std::string& name);

} // namespace venvtx
