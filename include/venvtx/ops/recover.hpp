// `venvtx recover`: finish what a crash left unfinished (txn/recover.hpp), and say what it was.
#pragma once

#include "venvtx/txn/context.hpp"

#include <optional>

namespace venvtx {

Outcome recover(const Context& context, std::optional<double> wait_s);

} // namespace venvtx
