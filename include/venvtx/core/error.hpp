// Error: the one exception type that crosses module boundaries, carrying a contract exit code.
#pragma once

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

class Error : public std::runtime_error {
public:
    Error(ExitCode code, const std::string& message) : std::runtime_error(message), m_code(code) {}
    ExitCode code() const { return m_code; }

private:
    ExitCode m_code;
};

// A usage/bad-input error (exit 2): nothing has been changed when this is thrown.
inline Error usage_error(const std::string& message) { return Error(ExitCode::usage, message); }

// An internal error (exit 1), typically a failed system call; `what` names the operation.
Error system_error(const std::string& what, int err);

} // namespace venvtx
