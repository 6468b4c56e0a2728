// Wall-clock timestamps in the contract's form (UTC, ISO 8601, seconds).
#pragma once

#include <string>

namespace venvtx {

std::string utc_now_iso8601();

} // namespace venvtx
