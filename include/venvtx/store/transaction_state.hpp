// The life of a transaction, as the index records it. Every value and every transition:
//
//   started ──> applied ──> committed ──> undone        (a later rollback undid it; a redo of
//      │           │            │                         that rollback makes it committed again)
//      │           │            └──> pruned             (gc: kept in the log, objects may go)
//      │           ├──> rolled_back                     (probe failed: restored, checked)
//      ├───────────┴──> aborted                         (apply failed, or the baseline probe
//      │                                                  failed before anything changed)
//      └──> interrupted ──> rolled_back                 (a restore failed, or venvtx died:
//                                                         `recover` brings back the before-state)
//   recorded                                           (an entry that changed nothing: a change
//                                                         made outside venvtx, a stamp, a run)
// started, applied and interrupted are unfinished: every mutating command recovers them first.
#pragma once

#include <optional>
#include <string>

namespace venvtx {

enum class TxState {
    started,
    applied,
    committed,
    rolled_back,
    undone,
    aborted,
    interrupted,
    pruned,
    recorded
};

const char* to_string(TxState state);
// The state spelled as the index stores it; nullopt for anything else (a damaged row).
std::optional<TxState> tx_state_from(const std::string& text);

} // namespace venvtx
