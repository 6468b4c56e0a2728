// Who runs venvtx, and where: recorded with every history entry.
#pragma once

#include <string>

namespace venvtx {

// The effective user's name (its number when the passwd database has no entry).
std::string user_name();
// The host's name, as gethostname gives it.
std::string host_name();

} // namespace venvtx
