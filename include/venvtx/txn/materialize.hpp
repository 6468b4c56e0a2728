// Bringing paths to a recorded state: directories first (shallowest first), then files and
// symlinks (each written to a temporary name in its own directory and renamed into place),
// then directories that must go (deepest first). Used to apply a change and to restore.
#pragma once

#include "venvtx/store/history.hpp"
#include "venvtx/store/object_store.hpp"
#include "venvtx/store/pending_captures.hpp"
#include "venvtx/venv/layout.hpp"
#include "venvtx/venv/switch_units.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace venvtx {

enum class Side { before, after };

// The state `entry` records on `side`.
inline const NodeState& target_of(const Entry& entry, Side side) {
    return side == Side::before ? entry.before : entry.after;
}

struct MaterializeSources {
    // Staging area of the transaction being undone: holds before-images not yet adopted.
    std::int64_t staging_tx = 0;
    // Objects renamed into place (zero-copy) on their last use instead of copied: those this
    // transaction created and alone refers to, unpacked ones (their pack keeps them), and a
    // rollback's loose objects that only the undone transaction refers to.
    std::set<std::string> movable;
    // Whatever is at a journaled path is the transaction's own (a command's restore: its
    // after-states are not known). Otherwise a node that is neither the target nor the other
    // side's state belongs to someone else: it is left alone and the path reported.
    bool owns_every_node = false;
    // A preview's upper layer holding after-state files under their venv-relative paths.
    std::filesystem::path layer;
    // Objects known intact without reading them again: hashed moments ago, or whose inode is
    // unchanged since they were stored.
    std::set<std::string> trusted;
    // Indexed objects not held loose: found at a path that must be emptied, such a file goes
    // back under its object name instead of being deleted (a rollback that moved it into place
    // failed or was killed: it may be an older transaction's only copy).
    std::set<std::string> returnable;
    // A rollback of a removal whose captures are pending (never hashed), by venv path: each
    // file waits in the removal's staging area and is renamed into place (its inode key was
    // checked before anything moved); found in the venv by a restore of that rollback, it is
    // renamed back there instead of being deleted.
    std::map<std::string, PendingSource> pending;
    // Switched units (txn/switching): their paths lie below their shadows, and what the shadow
    // of a unit that is there now takes from staging or the store is linked there (copied across
    // filesystems), not moved: until the unit is switched, a crash must find every source where
    // it was. (A fresh unit's shadow takes them by rename: recovery completes its switch.)
    const Relocation* relocation = nullptr;
};

// A source a shadow took by a link: removed once its unit is switched in.
struct LinkedSource {
    std::string path;  // the venv path it was linked to
    std::filesystem::path source;
    std::string object;  // the object it is, if it came from the store
};

// What a materialize did: objects renamed back, and the paths it could not bring to their
// target state, each checked after the fact (a "restored" verdict lists none).
struct MaterializeResult {
    std::vector<std::string> moved;
    std::vector<std::string> unrestored;
    std::vector<std::string> returned;  // placed objects moved back under their object names
    std::vector<std::string> returned_pending;  // paths whose pending file went back to staging
    std::vector<LinkedSource> linked;
};

// The temporary name a file or symlink is written under before it is renamed into place.
std::filesystem::path temporary_path_for(const std::filesystem::path& path, std::int64_t entry_id);

// The stored objects bringing `entries` to their `side` state reads.
std::set<std::string> objects_needed(const std::vector<Entry>& entries, Side side);

// Verifies, before touching the venv, every object the target state needs (except trusted
// ones) and throws an Error naming the first bad one.
void verify_needed_objects(const ObjectStore& objects, const std::vector<Entry>& entries, Side side,
                           const MaterializeSources& sources);

// Makes every entry's path match its `side` state. Idempotent: paths already in that state
// (content compared) are left alone, so an interrupted call can simply be repeated. A path that
// cannot be brought there (a missing pre-image, someone else's node, an I/O error) does not stop
// the others; afterwards every path is checked against its target and the misses returned.
MaterializeResult materialize(const VenvLayout& layout, ObjectStore& objects, std::vector<Entry>& entries,
                              Side side, const MaterializeSources& sources);

class Materializer;

// materialize() in two steps, for a switched change: place() brings each path to its state
// below its unit's shadow (sources.relocation); once the shadows are switched in,
// check_switched() checks every path where the venv now has it.
class ShadowMaterialize {
public:
    ShadowMaterialize(const VenvLayout& layout, ObjectStore& objects, std::vector<Entry>& entries, Side side,
                      const MaterializeSources& sources);
    ~ShadowMaterialize();
    void place();
    // What placing could not bring to its state (every path is checked after the switch).
    std::vector<std::string> unplaced() const;
    MaterializeResult check_switched(const std::vector<std::string>& unit_roots);

private:
    std::unique_ptr<Materializer> m_materializer;
};

} // namespace venvtx
