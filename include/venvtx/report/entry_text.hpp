// How a history entry that is not a transaction reads in `show`: an outside change (what was
// added, removed, changed, when, by which installer), a stamp, a tracked run (the command, its
// exit status, the venv's files it mapped by distribution).
#pragma once

#include "venvtx/store/history.hpp"

#include <string>

namespace venvtx {

std::string recorded_entry_details(const TransactionRecord& record);
// "  by       root@node1, venvtx 0.1.0\n  state    1a2b3c4d5e6f -> 9f8e7d6c5b4a\n"
std::string entry_origin_lines(const TransactionRecord& record);
// A command line (a JSON array of strings) as a shell would need it typed: one space between
// arguments, each bare when safe, else in single quotes.
std::string shell_command(const nlohmann::json& argv);

} // namespace venvtx
