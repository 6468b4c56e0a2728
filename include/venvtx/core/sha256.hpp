// SHA-256 of files and strings (OpenSSL EVP), as lowercase hex or RECORD's urlsafe base64.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace venvtx {

struct FileDigest {
    std::string hex;      // 64 lowercase hex digits
    std::uint64_t size = 0;
};

// Hashes a regular file without following a final symlink. Throws Error on I/O failure.
FileDigest sha256_file(const std::filesystem::path& path);
// How sha256_files reaches each file: by its path (the last component never followed), or
// beneath a Confinement root with no symlink on any component (a directory a user may swap).
enum class HashOpen { by_path, confined };
// Hashes many files on several threads; result i belongs to paths[i]. Rethrows the first error.
std::vector<FileDigest> sha256_files(const std::vector<std::filesystem::path>& paths,
                                     HashOpen open = HashOpen::by_path);
std::string sha256_hex(const std::string& data);

// A digest fed in pieces (bytes streamed out of a pack).
class Sha256Stream {
public:
    Sha256Stream();
    ~Sha256Stream();
    Sha256Stream(const Sha256Stream&) = delete;
    Sha256Stream& operator=(const Sha256Stream&) = delete;
    void update(const void* data, std::size_t size);
    FileDigest finish();

private:
    void* m_context;
    std::uint64_t m_size = 0;
};
// RECORD's form: "sha256=" + urlsafe base64 without padding (PEP 376 / wheel spec).
std::string record_hash_from_hex(const std::string& hex);
// The hex digest a RECORD hash names; empty unless it is "sha256=" and 43 base64 digits of 32 bytes.
std::string hex_from_record_hash(const std::string& record_hash);

} // namespace venvtx
