// MemorySource and FileSource: bounds-checked reads for the ELF parser.
#include "byte_source.hpp"

#include "venvtx/core/error.hpp"

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace venvtx::elf_detail {

bool MemorySource::read(std::uint64_t offset, void* out, std::size_t n) {
    if (!in_bounds(offset, n, m_bytes.size())) {
        return false;
    }
    if (n > 0) {
        std::memcpy(out, m_bytes.data() + offset, n);
    }
    return true;
}

FileSource::~FileSource() { ::close(m_fd); }

bool FileSource::read(std::uint64_t offset, void* out, std::size_t n) {
    if (!in_bounds(offset, n, m_size)) {
        return false;
    }
    auto* at = static_cast<char*>(out);
    while (n > 0) {
        ssize_t got = ::pread(m_fd, at, n, static_cast<off_t>(offset));
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            throw system_error("read " + m_name, errno);
        }
        if (got == 0) {
            return false;
        }
        at += got;
        offset += static_cast<std::uint64_t>(got);
        n -= static_cast<std::size_t>(got);
    }
    return true;
}

} // namespace venvtx::elf_detail
