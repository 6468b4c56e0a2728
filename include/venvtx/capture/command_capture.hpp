// How `install` and `run` keep the pre-images of what a command changes, each in staging/<tx>
// under its entry id:
// - touch (default where the kernel allows it): the command runs under a MutationTrap; each
//   path is journaled and its pre-image kept the moment before the command first changes it
//   (a hard link, or a copy when the file is about to be written in place). Untouched files
//   cost nothing, and in-place edits are undoable.
// - link: every venv file is hard-linked beforehand (one link() a file, no data copied), and
//   the venv is snapshotted again afterwards; a file written in place has no pre-image unless
//   --copy copied it beforehand.
#pragma once

#include "venvtx/capture/snapshot.hpp"
#include "venvtx/core/subprocess.hpp"
#include "venvtx/store/history.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace venvtx {

// What the command did, against what was journaled before it.
struct CommandDiff {
    std::vector<std::int64_t> unchanged;  // journaled entries that ended as they began
    std::vector<Entry> changed;           // journaled entries with their after-state
    std::vector<Entry> added;             // paths not journaled before (no id yet)
    std::vector<std::string> in_place;    // changed in place with no pre-image (link mode only)
};

class CommandCapture {
public:
    virtual ~CommandCapture() = default;
    // Before the command runs; may set up `spec` to watch it.
    virtual void prepare(SubprocessSpec& spec) = 0;
    // After it ended (whatever its exit status). Throws when a pre-image could not be kept.
    virtual CommandDiff diff() = 0;
    virtual std::string describe() const = 0;  // for -v
};

struct CaptureTarget {
    const VenvLayout& layout;
    std::filesystem::path store_root;
    std::filesystem::path staging;
    std::int64_t tx = 0;
};

// `entries`: the journaled snapshot (ids set); `inodes`: its files' inodes.
std::unique_ptr<CommandCapture> make_link_capture(const CaptureTarget& target, const std::vector<Entry>& entries,
                                                  std::map<std::string, InodeFacts> inodes, bool copy_small_files);
std::unique_ptr<CommandCapture> make_touch_capture(const CaptureTarget& target, History& history);

// Each strategy's part of recovering a command that was interrupted before its diff: completes
// `entries` with what the journal implies, and returns new paths nothing attributes to the
// transaction (left in place; the verdict names them).
std::vector<std::string> link_capture_recovery(const VenvLayout& layout, const std::filesystem::path& store_root,
                                               const std::vector<Entry>& entries);
std::vector<std::string> touch_capture_recovery(const VenvLayout& layout, const std::filesystem::path& store_root,
                                                std::vector<Entry>& entries);

} // namespace venvtx
