// `venvtx install`, `venvtx run` and `venvtx sync`: any command that mutates the venv, as one transaction.
// The pre-images of what it changes are kept in staging (see command_capture.hpp for the two
// ways), hashed into the store afterwards, and the paths diffed; a file changed in place with
// no pre-image is reported, never restored from a wrong image.
#pragma once

#include "venvtx/txn/context.hpp"

#include <string>
#include <vector>

namespace venvtx {

// --capture: see command_capture.hpp; automatic picks touch or link per command.
enum class CaptureMode { automatic, touch, link };

// "auto", "touch" or "link"; anything else is a usage Error.
CaptureMode capture_mode_from(const std::string& text);

// --installer: automatic takes uv when it is on PATH, else pip.
enum class Installer { automatic, pip, uv };

// "auto", "pip" or "uv"; anything else is a usage Error.
Installer installer_from(const std::string& text);

struct CommandOptions {
    std::string kind;                // "install", "run" or "sync"
    std::vector<std::string> argv;   // the command to run
    bool copy_small_files = false;   // --copy (link capture)
    CaptureMode capture = CaptureMode::automatic;
    std::vector<std::string> specs;  // install: what it names (auto capture looks at their size)
    MutationOptions mutation;
};

Outcome run_command_transaction(const Context& context, const CommandOptions& options);

// The installer command for `venvtx install`: uv when on PATH (or asked for), else the venv's
// own `python -m pip` (never bin/pip, whose shebang may name another venv).
std::vector<std::string> installer_command(const VenvLayout& layout, Installer installer,
                                           const std::vector<std::string>& specs,
                                           const std::vector<std::string>& extra_args);

// `installer` (an installer_command) made to uninstall `names`: "uninstall" for its "install",
// and pip's -y.
std::vector<std::string> uninstall_command(const std::vector<std::string>& installer,
                                           const std::vector<std::string>& names);

} // namespace venvtx
