// What `log` prints of each transaction, read with only the columns a line shows: a long history
// is listed in the time it takes SQLite to step its rows, not to decode every report.
#pragma once

#include "venvtx/store/database.hpp"
#include "venvtx/store/history.hpp"
#include "venvtx/store/transaction_state.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace venvtx {

struct TransactionLine {
    std::int64_t id = 0;
    std::string kind;
    TxState state = TxState::started;
    std::string started_at;
    std::string at;  // the time log shows: started_at, or for an outside change its window's end (detected then)
    std::vector<PackageChange> packages; // in the order the transaction recorded them
    std::optional<std::int64_t> undoes;
    std::optional<std::int64_t> undone_by;
    std::string user;
    std::string host;
    std::string note;  // an outside change's installers, a run's command, a stamp's comment
    std::vector<std::string> argv;  // the venvtx command line that made it
    std::string reason;             // why an aborted or rolled-back change did not stay
};

// Newest first, at most `limit`.
std::vector<TransactionLine> transaction_lines(Database& db, std::optional<std::int64_t> limit);

} // namespace venvtx
