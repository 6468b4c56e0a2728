// transaction_lines: two queries, the transactions and then all their package names.
#include "venvtx/store/transaction_lines.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace venvtx {

std::vector<TransactionLine> transaction_lines(Database& db, std::optional<std::int64_t> limit) {
    Statement query = db.prepare(
        "SELECT id, kind, state, started_at, undoes, undone_by, user, host, CASE WHEN details IS NULL THEN NULL ELSE json_extract(details, '$.note') END, "
        "CASE WHEN kind = 'outside' THEN COALESCE(finished_at, started_at) ELSE started_at END, argv, "
        "CASE WHEN state IN ('aborted', 'rolled_back') THEN message END "
        "FROM transactions ORDER BY id DESC LIMIT ?");
    query.bind(1, limit.value_or(-1));
    std::vector<TransactionLine> lines;
    Statement count = db.prepare("SELECT COUNT(*) FROM transactions");
    count.step();
    lines.reserve(static_cast<std::size_t>(std::min(count.integer(0), limit.value_or(count.integer(0)))));
    while (query.step()) {
        TransactionLine& line = lines.emplace_back();
        line.id = query.integer(0);
        line.kind = query.text(1);
        line.state = tx_state_from(query.text(2)).value_or(TxState::interrupted);
        line.started_at = query.text(3);
        line.undoes = query.optional_integer(4);
        line.undone_by = query.optional_integer(5);
        line.user = query.optional_text(6).value_or("");
        line.host = query.optional_text(7).value_or("");
        line.note = query.optional_text(8).value_or("");
        line.at = query.text(9);
        nlohmann::json argv = nlohmann::json::parse(query.optional_text(10).value_or("[]"), nullptr, false);
        for (const auto& arg : argv.is_array() ? argv : nlohmann::json::array()) {
            if (arg.is_string()) {
                line.argv.push_back(arg.get<std::string>());
            }
        }
        line.reason = query.optional_text(11).value_or("");
    }
    if (lines.empty()) {
        return lines;
    }
    // packages_by_tx holds (tx_id, rowid): this order needs no sort, and each transaction's
    // packages come in the order it recorded them.
    Statement packages =
        db.prepare("SELECT tx_id, name, before, after FROM packages WHERE tx_id BETWEEN ? AND ? ORDER BY tx_id, rowid");
    packages.bind(1, lines.back().id).bind(2, lines.front().id);
    while (packages.step()) {
        std::int64_t tx = packages.integer(0);
        auto line = std::lower_bound(lines.begin(), lines.end(), tx, // lines are newest first
                                     [](const TransactionLine& listed, std::int64_t id) { return listed.id > id; });
        if (line != lines.end() && line->id == tx) {
            line->packages.push_back({packages.text(1), packages.optional_text(2), packages.optional_text(3)});
        }
    }
    return lines;
}

} // namespace venvtx
