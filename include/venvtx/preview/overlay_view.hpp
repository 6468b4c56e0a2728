// A private view of the venv for previewing a change: a mount namespace (inside a user
// namespace when not root) in which the venv's root is an overlay whose lower layer is the
// live venv and whose upper layer collects the change — whiteouts for deletions, new files,
// copied-up modifications. The live tree is only read. The store and <venv>/.lock are hidden
// inside, so nothing run there can touch the history or another process's lock.
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

namespace venvtx {

// The system refuses a private view (no namespaces, no overlayfs, a seccomp or AppArmor rule):
// the caller falls back to changing the venv in place, or refuses under --preview always.
class PreviewUnavailable : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Where one preview keeps its layer: <base>/preview/<pid>-<n>/{upper,work,lock}. The directory is
// removed when the area goes; one a killed venvtx left is removed by remove_stale_previews.
class PreviewArea {
public:
    // In the store (on the venv's filesystem, so that the upper layer's files can be renamed
    // into the venv); with no store (a what-if), in a private temporary directory.
    explicit PreviewArea(const std::optional<std::filesystem::path>& store_root);
    ~PreviewArea();
    PreviewArea(const PreviewArea&) = delete;
    PreviewArea& operator=(const PreviewArea&) = delete;

    const std::filesystem::path& upper() const { return m_upper; }
    const std::filesystem::path& work() const { return m_work; }
    const std::filesystem::path& lock() const { return m_lock; }

private:
    std::filesystem::path m_temporary;  // the private base of a what-if, removed too
    std::filesystem::path m_dir;
    std::filesystem::path m_upper;
    std::filesystem::path m_work;
    std::filesystem::path m_lock;
};

// Removes every preview area under `store_root` (only previews of the lock holder exist, so
// with the lock held, any that is there was left by a killed venvtx).
void remove_stale_previews(const std::filesystem::path& store_root);

// Mounts the view's overlay (layers given as descriptors) on `lower` in this mount namespace;
// false (errno set) where the kernel refuses every set of options.
bool mount_view_overlay(int lower, int upper, int work, bool root);

// In a worker process (single-threaded, about to exit): enters the private view of `venv_root`
// with `area`'s layer, hiding `store_root` and <venv_root>/.lock. Throws PreviewUnavailable.
void enter_overlay_view(const PreviewArea& area, const std::filesystem::path& venv_root,
                        const std::filesystem::path& store_root);

} // namespace venvtx
