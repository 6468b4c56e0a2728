// Error's kinds and details, and the formatting of system-call failures into it.
#include "venvtx/core/error.hpp"

#include <nlohmann/json.hpp>

#include <cstring>

namespace venvtx {

const char* default_error_kind(ExitCode code) {
    switch (code) {
    case ExitCode::ok:
        return "ok";
    case ExitCode::internal:
        return "internal";
    case ExitCode::usage:
        return "usage";
    case ExitCode::probe_failed:
        return "probe_failed";
    case ExitCode::baseline_failed:
        return "baseline_failed";
    case ExitCode::locked:
        return "locked";
    case ExitCode::verify_failed:
        return "verify_failed";
    case ExitCode::interrupted:
        return "interrupted";
    }
    return "internal";
}

Error::Error(ExitCode code, const std::string& message)
    : Error(code, default_error_kind(code), message, nlohmann::json::object()) {}

Error::Error(ExitCode code, std::string kind, const std::string& message, const nlohmann::json& details)
    : std::runtime_error(message), m_code(code), m_kind(std::move(kind)),
      m_details(std::make_shared<const nlohmann::json>(details.is_object() ? details : nlohmann::json::object())) {}

const nlohmann::json& Error::details() const { return *m_details; }

Error system_error(const std::string& what, int err) {
    std::string message = what; // appended, not `what + ": " + ...` (a false -Wrestrict in g++ 12 -O3)
    message += ": ";
    message += std::strerror(err);
    return Error(ExitCode::internal, "system", message, {{"errno", err}, {"operation", what}});
}

} // namespace venvtx
