// Formatting of system-call failures into venvtx::Error.
#include "venvtx/core/error.hpp"

#include <cstring>

namespace venvtx {

Error system_error(const std::string& what, int err) {
    std::string message = what; // appended, not `what + ": " + ...` (a false -Wrestrict in g++ 12 -O3)
    message += ": ";
    message += std::strerror(err);
    return Error(ExitCode::internal, message);
}

} // namespace venvtx
