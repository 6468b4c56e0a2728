// SHA-256 through OpenSSL's EVP interface.
#include "venvtx/core/sha256.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/progress.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <exception>
#include <mutex>
#include <string_view>
#include <thread>
#include <fcntl.h>
#include <memory>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace venvtx {

namespace {

using DigestContext = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

DigestContext new_context() {
    DigestContext context(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1) {
        throw Error(ExitCode::internal, "cannot initialise SHA-256");
    }
    return context;
}

std::string finish_hex(EVP_MD_CTX* context) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_DigestFinal_ex(context, digest, &length);
    static const char* k_hex = "0123456789abcdef";
    std::string hex;
    hex.reserve(length * 2);
    for (unsigned int i = 0; i < length; ++i) {
        hex.push_back(k_hex[digest[i] >> 4]);
        hex.push_back(k_hex[digest[i] & 15]);
    }
    return hex;
}

// Reads `fd` (of `path`) to its end and closes it.
FileDigest sha256_open_file(const std::filesystem::path& path, int fd) {
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    auto context = new_context();
    constexpr size_t k_block = 1 << 20;
    thread_local std::unique_ptr<char[]> buffer(new char[k_block]); // one per thread, never cleared
    FileDigest digest;
    for (;;) {
        ssize_t n = ::read(fd, buffer.get(), k_block);
        if (n < 0) {
            int err = errno;
            ::close(fd);
            throw system_error("read " + path.string(), err);
        }
        if (n == 0) {
            break;
        }
        EVP_DigestUpdate(context.get(), buffer.get(), static_cast<size_t>(n));
        digest.size += static_cast<std::uint64_t>(n);
    }
    ::close(fd);
    digest.hex = finish_hex(context.get());
    return digest;
}

FileDigest sha256_confined(const std::filesystem::path& path) {
    ParentDir parent = Confinement::instance().open_parent(path);
    int fd = ::openat(parent.dir.get(), parent.leaf.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        throw system_error("open " + path.string(), errno);
    }
    return sha256_open_file(path, fd);
}

} // namespace

FileDigest sha256_file(const std::filesystem::path& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        throw system_error("open " + path.string(), errno);
    }
    return sha256_open_file(path, fd);
}

std::vector<FileDigest> sha256_files(const std::vector<std::filesystem::path>& paths, HashOpen open) {
    std::vector<FileDigest> results(paths.size());
    Progress::Phase phase("hashing", paths.size(), "files");
    // Largest first, so that the big files run side by side and the small ones fill in.
    std::vector<std::pair<std::uint64_t, size_t>> order;
    for (size_t i = 0; i < paths.size(); ++i) {
        struct stat st {};
        bool found = open == HashOpen::confined ? Confinement::instance().stat_node(paths[i], st)
                                                : ::lstat(paths[i].c_str(), &st) == 0;
        order.emplace_back(found ? static_cast<std::uint64_t>(st.st_size) : 0, i);
    }
    std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::atomic<size_t> next{0};
    std::exception_ptr failure;
    std::mutex failure_mutex;
    auto work = [&]() {
        for (size_t n = next++; n < order.size(); n = next++) {
            size_t i = order[n].second;
            try {
                results[i] = open == HashOpen::confined ? sha256_confined(paths[i]) : sha256_file(paths[i]);
                Progress::advance(1, results[i].size);
            } catch (...) {
                std::lock_guard<std::mutex> guard(failure_mutex);
                failure = std::current_exception();
            }
        }
    };
    size_t workers = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
    workers = std::min(workers, std::max<size_t>(paths.size(), 1));
    std::vector<std::thread> threads;
    for (size_t i = 1; i < workers; ++i) {
        threads.emplace_back(work);
    }
    work();
    for (auto& thread : threads) {
        thread.join();
    }
    if (failure) {
        std::rethrow_exception(failure);
    }
    return results;
}

Sha256Stream::Sha256Stream() : m_context(new_context().release()) {}

Sha256Stream::~Sha256Stream() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(m_context)); }

void Sha256Stream::update(const void* data, std::size_t size) {
    EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(m_context), data, size);
    m_size += size;
}

FileDigest Sha256Stream::finish() { return {finish_hex(static_cast<EVP_MD_CTX*>(m_context)), m_size}; }

std::string sha256_hex(const std::string& data) {
    auto context = new_context();
    EVP_DigestUpdate(context.get(), data.data(), data.size());
    return finish_hex(context.get());
}

std::string record_hash_from_hex(const std::string& hex) {
    std::vector<unsigned char> bytes;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) {
        bytes.push_back(static_cast<unsigned char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    }
    static const char* k_alphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out = "sha256=";
    size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
        unsigned v = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
        out += k_alphabet[(v >> 18) & 63];
        out += k_alphabet[(v >> 12) & 63];
        out += k_alphabet[(v >> 6) & 63];
        out += k_alphabet[v & 63];
    }
    size_t rest = bytes.size() - i;
    if (rest == 1) {
        unsigned v = bytes[i] << 16;
        out += k_alphabet[(v >> 18) & 63];
        out += k_alphabet[(v >> 12) & 63];
    } else if (rest == 2) {
        unsigned v = (bytes[i] << 16) | (bytes[i + 1] << 8);
        out += k_alphabet[(v >> 18) & 63];
        out += k_alphabet[(v >> 12) & 63];
        out += k_alphabet[(v >> 6) & 63];
    }
    return out;
}

std::string hex_from_record_hash(const std::string& record_hash) {
    constexpr std::string_view k_prefix = "sha256=";
    if (record_hash.size() != k_prefix.size() + 43 || record_hash.compare(0, k_prefix.size(), k_prefix) != 0) {
        return "";
    }
    static const std::string_view k_alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::uint64_t bits = 0;
    int count = 0;
    std::string hex;
    static const char* k_hex = "0123456789abcdef";
    for (char c : record_hash.substr(k_prefix.size())) {
        std::size_t value = k_alphabet.find(c);
        if (value == std::string_view::npos) {
            return "";
        }
        bits = (bits << 6) | value;
        count += 6;
        if (count >= 8) {
            count -= 8;
            unsigned byte = (bits >> count) & 0xff;
            hex += k_hex[byte >> 4];
            hex += k_hex[byte & 15];
        }
    }
    return hex.size() == 64 ? hex : "";
}

} // namespace venvtx
