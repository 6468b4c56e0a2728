// Formatting of system-call failures into venvtx::Error.
#include "venvtx/core/error.hpp"

#include <cstring>

namespace venvtx {

Error system_error(const std::string& what, int err) {
    return Error(ExitCode::internal, what + ": " + std::strerror(err));
}

} // namespace venvtx
