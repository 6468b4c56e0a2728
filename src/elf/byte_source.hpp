// Random-access byte sources for the ELF parser: a buffer in memory, or a file read with pread
// (so a 500 MB library is never loaded whole).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace venvtx::elf_detail {

// Whether [offset, offset + n) lies within `size` bytes, without overflowing.
inline bool in_bounds(std::uint64_t offset, std::uint64_t n, std::uint64_t size) {
    return offset <= size && n <= size - offset;
}

class ByteSource {
public:
    virtual ~ByteSource() = default;
    virtual std::uint64_t size() const = 0;
    // Fills out[0, n) from `offset`; false when any of it lies past the end.
    virtual bool read(std::uint64_t offset, void* out, std::size_t n) = 0;
};

class MemorySource final : public ByteSource {
public:
    explicit MemorySource(std::string_view bytes) : m_bytes(bytes) {}
    std::uint64_t size() const override { return m_bytes.size(); }
    bool read(std::uint64_t offset, void* out, std::size_t n) override;

private:
    std::string_view m_bytes;
};

// Owns `fd`. A read error throws; a file that shrank under us reads as past the end.
class FileSource final : public ByteSource {
public:
    FileSource(int fd, std::uint64_t size, std::string name)
        : m_fd(fd), m_size(size), m_name(std::move(name)) {}
    ~FileSource() override;
    FileSource(const FileSource&) = delete;
    FileSource& operator=(const FileSource&) = delete;

    std::uint64_t size() const override { return m_size; }
    bool read(std::uint64_t offset, void* out, std::size_t n) override;

private:
    int m_fd;
    std::uint64_t m_size;
    std::string m_name;
};

} // namespace venvtx::elf_detail
