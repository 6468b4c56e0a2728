// Error: the one exception type that crosses module boundaries, carrying a contract exit code,
// a kind a script can switch on (docs/json.md) and, where there are any, structured details.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <stdexcept>
#include <string>

namespace venvtx {

// Exit codes from the contract (docs/design.md, "The contract").
enum class ExitCode : int {
    ok = 0,
    internal = 1,
    usage = 2,
    probe_failed = 3,
    baseline_failed = 4,
    locked = 5,
    verify_failed = 6,
    interrupted = 130,  // SIGINT, SIGTERM or SIGHUP while a probe ran: restored first, as for a failure
};

// The kind an exit code has when nothing more precise is said: "usage", "locked", ...
const char* default_error_kind(ExitCode code);

class Error : public std::runtime_error {
public:
    Error(ExitCode code, const std::string& message);
    // `kind` refines the exit code ("no_match", "drift", ...); `details` is a JSON object.
    Error(ExitCode code, std::string kind, const std::string& message, const nlohmann::json& details);

    ExitCode code() const { return m_code; }
    const std::string& kind() const { return m_kind; }
    // A JSON object: empty unless the thrower said more (the paths, the transaction, ...).
    const nlohmann::json& details() const;

private:
    ExitCode m_code;
    std::string m_kind;
    std::shared_ptr<const nlohmann::json> m_details; // shared: an exception must copy without throwing
};

// A usage/bad-input error (exit 2): nothing has been changed when this is thrown.
inline Error usage_error(const std::string& message) { return Error(ExitCode::usage, message); }

// An internal error (exit 1), typically a failed system call; `what` names the operation.
Error system_error(const std::string& what, int err);

} // namespace venvtx
