// TempDir: a private mkdtemp directory for one test, removed when the test ends; the fs seam
// is confined to it.
#pragma once

#include "venvtx/core/confinement.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace venvtx::test {

class TempDir {
public:
    TempDir() {
        std::string pattern = "/tmp/venvtx-unit-XXXXXX";
        if (::mkdtemp(pattern.data()) == nullptr) {
            throw std::runtime_error("mkdtemp failed");
        }
        m_path = pattern;
        Confinement::instance().set_roots({m_path}); // the test's own root, as a venv's would be
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(m_path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::filesystem::path& path() const { return m_path; }

private:
    std::filesystem::path m_path;
};

// Writes `content` to `path`, creating its parent directories.
inline void write_file(const std::filesystem::path& path, const std::string& content) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out << content;
    if (!out) {
        throw std::runtime_error("cannot write " + path.string());
    }
}

} // namespace venvtx::test
