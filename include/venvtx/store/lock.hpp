// Exclusive advisory locks (flock) on the store and on <venv>/.lock, the file uv locks too.
#pragma once

#include <filesystem>
#include <optional>

namespace venvtx {

class FileLock {
public:
    // Takes an exclusive flock on `path` (created if missing), waiting up to `wait_s` seconds
    // (nullopt: forever). Throws Error with exit code 5 when it cannot.
    FileLock(const std::filesystem::path& path, std::optional<double> wait_s, const char* what);
    ~FileLock();
    // Lets another process take the lock for a while (e.g. the uv that venvtx itself runs).
    void release();
    void reacquire();
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;

private:
    int m_fd = -1;
    std::filesystem::path m_path;
};

} // namespace venvtx
