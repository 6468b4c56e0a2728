// How long the store keeps what it captured. A transaction is kept while it is among the newest
// `keep_last`, or younger than `keep_seconds`; beyond `max_bytes` of objects, the oldest kept
// ones go too (never the newest). What is not kept is pruned: it stays in the log, its objects
// may go. Pruning always takes the oldest first, so the pruned ones are a prefix of the history.
#pragma once

#include "venvtx/store/database.hpp"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace venvtx {

struct RetentionPolicy {
    std::optional<std::int64_t> keep_last;
    std::optional<std::int64_t> keep_seconds;
    std::optional<std::uint64_t> max_bytes;
    bool automatic = true;  // applied after every commit

    // keep the last 20, everything from the last 30 days, at most 20 GB, automatically.
    static RetentionPolicy defaults();
    nlohmann::json json() const;
};

// The policy the store holds (the defaults where it holds none).
RetentionPolicy load_policy(Database& db);
void save_policy(Database& db, const RetentionPolicy& policy);

// "30d", "12h", "90m", "45s", "2w" -> seconds; "10G", "500M", "64k", "1.5GB", "2GiB", "123" ->
// bytes (K, M, G, T are powers of 1000, KiB... of 1024).
// A usage Error for anything else.
std::int64_t parse_duration(const std::string& text);
std::uint64_t parse_size(const std::string& text);

} // namespace venvtx
