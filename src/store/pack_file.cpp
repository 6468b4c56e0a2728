// write_pack_file / read_pack_file: libarchive, tar (pax) + zstd, our writes through the fs seam.
#include "venvtx/store/pack_file.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/core/progress.hpp"
#include "venvtx/core/sha256.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <cstring>
#include <algorithm>
#include <fcntl.h>
#include <memory>
#include <optional>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

// Big blocks: few writes (each a step of the fs seam), sequential reads.
constexpr int k_block_bytes = 1 << 20;

// A writer that, unless closed, is marked failed before it is freed: freeing a healthy writer
// would close it, writing out the rest of the member as zeros and the trailer.
struct WriteArchive {
    archive* handle = archive_write_new();
    bool closed = false;
    WriteArchive() = default;
    WriteArchive(const WriteArchive&) = delete;
    WriteArchive& operator=(const WriteArchive&) = delete;
    ~WriteArchive() {
        if (!closed) {
            archive_write_fail(handle);
        }
        archive_write_free(handle);
    }
};
struct ReaderCloser {
    void operator()(archive* handle) const { archive_read_free(handle); }
};

struct WriteTarget {
    int fd = -1;
    stdfs::path path;
    std::optional<FsError> failure;  // the seam's error, rethrown after libarchive gives up
};

la_ssize_t write_block(archive*, void* client, const void* buffer, size_t size) {
    auto* target = static_cast<WriteTarget*>(client);
    try {
        Fs::instance().write(target->fd, buffer, size, target->path);
        return static_cast<la_ssize_t>(size);
    } catch (const FsError& error) {
        target->failure = error;
        return -1;
    }
}

UniqueFd open_for_reading(const stdfs::path& path) {
    ParentDir parent = Confinement::instance().open_parent(path);
    return UniqueFd(::openat(parent.dir.get(), parent.leaf.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
}

std::string error_text(archive* handle) {
    const char* text = archive_error_string(handle);
    return text != nullptr ? text : "libarchive error";
}

// The loose object's extended attributes, names and values.
std::vector<std::pair<std::string, std::string>> xattrs_of(int fd) {
    std::vector<std::pair<std::string, std::string>> found;
    ssize_t length = ::flistxattr(fd, nullptr, 0);
    std::vector<char> names(length > 0 ? static_cast<std::size_t>(length) : 0);
    length = names.empty() ? 0 : ::flistxattr(fd, names.data(), names.size());
    for (ssize_t at = 0; length > 0 && at < length;) {
        std::string name = names.data() + at;
        at += static_cast<ssize_t>(name.size()) + 1;
        ssize_t size = ::fgetxattr(fd, name.c_str(), nullptr, 0);
        std::string value(size > 0 ? static_cast<std::size_t>(size) : 0, '\0');
        if (size >= 0 && ::fgetxattr(fd, name.c_str(), value.data(), value.size()) == size) {
            found.emplace_back(name, value);
        }
    }
    return found;
}

Error archive_error(archive* handle, const std::string& what) {
    return Error(ExitCode::internal, what + ": " + error_text(handle));
}

void write_member(archive* handle, WriteTarget& target, const PackSource& source, std::vector<char>& buffer) {
    UniqueFd in = open_for_reading(source.file);
    struct stat st {};
    if (!in.valid() || ::fstat(in.get(), &st) != 0) {
        throw system_error("open " + source.file.string(), errno);
    }
    std::unique_ptr<archive_entry, decltype(&archive_entry_free)> entry(archive_entry_new(), archive_entry_free);
    archive_entry_set_pathname(entry.get(), source.hex.c_str());
    archive_entry_set_filetype(entry.get(), AE_IFREG);
    archive_entry_set_perm(entry.get(), 0444);
    archive_entry_set_size(entry.get(), st.st_size);
    archive_entry_set_uid(entry.get(), st.st_uid);
    archive_entry_set_gid(entry.get(), st.st_gid);
    for (const auto& [name, value] : xattrs_of(in.get())) {
        archive_entry_xattr_add_entry(entry.get(), name.c_str(), value.data(), value.size());
    }
    if (archive_write_header(handle, entry.get()) != ARCHIVE_OK) {
        throw target.failure ? Error(*target.failure) : archive_error(handle, "pack " + target.path.string());
    }
    // The bytes are hashed on their way in: a loose object that rotted, or one shorter than its
    // header says, never becomes a sealed member whose loose copy is then deleted.
    Sha256Stream digest;
    for (;;) {
        ssize_t n = ::read(in.get(), buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            throw system_error("read " + source.file.string(), errno);
        }
        if (n == 0) {
            break;
        }
        digest.update(buffer.data(), static_cast<std::size_t>(n));
        if (archive_write_data(handle, buffer.data(), static_cast<size_t>(n)) != n) {
            throw target.failure ? Error(*target.failure) : archive_error(handle, "pack " + target.path.string());
        }
        Progress::advance(0, static_cast<std::uint64_t>(n));
    }
    FileDigest got = digest.finish();
    if (got.hex != source.hex || got.size != static_cast<std::uint64_t>(st.st_size)) {
        throw Error(ExitCode::verify_failed, "store object " + source.hex + " is corrupted (" + source.file.string() +
                                                 " hashes to " + got.hex + "): not packed");
    }
    Progress::advance(1);
}

} // namespace

std::uint64_t write_pack_file(const stdfs::path& path, const std::vector<PackSource>& sources) {
    Fs& fs = Fs::instance();
    UniqueFd out = fs.create_file(path, 0444);
    WriteTarget target{out.get(), path, std::nullopt};
    try {
        WriteArchive writer;
        archive* handle = writer.handle;
        if (archive_write_set_format_pax_restricted(handle) != ARCHIVE_OK ||
            archive_write_add_filter_zstd(handle) != ARCHIVE_OK) { // WARN: an external zstd program
            throw archive_error(handle, "pack " + path.string() + ": no built-in zstd");
        }
        // zstd's own worker threads, at `tar --zstd`'s level 3: compression is most of a pack's
        // time. Measured (bench/packs_vs_tar.py, 1.3 GB of CUDA libraries, 2 cores): 0.88x tar's
        // time at 1.001x its size; level 4 was 1.01x the time at 0.999x the size.
        std::string threads = std::to_string(std::clamp(std::thread::hardware_concurrency(), 1U, 8U));
        archive_write_set_filter_option(handle, "zstd", "threads", threads.c_str());
        archive_write_set_bytes_per_block(handle, k_block_bytes);
        archive_write_set_bytes_in_last_block(handle, 1);
        if (archive_write_open(handle, &target, nullptr, write_block, nullptr) != ARCHIVE_OK) {
            throw archive_error(handle, "pack " + path.string());
        }
        std::vector<char> buffer(k_block_bytes);
        for (const auto& source : sources) {
            write_member(handle, target, source, buffer);
        }
        writer.closed = true;
        if (archive_write_close(handle) != ARCHIVE_OK) {
            throw target.failure ? Error(*target.failure) : archive_error(handle, "pack " + path.string());
        }
        fs.fsync(out.get(), path);
    } catch (...) {
        out = UniqueFd();
        try {
            fs.unlink(path);
        } catch (const FsError&) {
            // A later gc deletes a pack file the index does not list.
        }
        throw;
    }
    struct stat st {};
    if (::fstat(out.get(), &st) != 0) {
        throw system_error("stat " + path.string(), errno);
    }
    return static_cast<std::uint64_t>(st.st_size);
}

void read_pack_file(const stdfs::path& path,
                    const std::function<void(const PackMember& member, const MemberReader& read)>& on_member) {
    UniqueFd in = open_for_reading(path);
    if (!in.valid()) {
        throw Error(ExitCode::verify_failed, "pack " + path.string() + " cannot be opened: " + std::strerror(errno));
    }
    std::unique_ptr<archive, ReaderCloser> handle(archive_read_new());
    if (archive_read_support_format_tar(handle.get()) != ARCHIVE_OK ||
        archive_read_support_filter_zstd(handle.get()) != ARCHIVE_OK) { // WARN: an external zstd program
        throw Error(ExitCode::internal, "pack " + path.string() + ": no built-in zstd reader");
    }
    if (archive_read_open_fd(handle.get(), in.get(), k_block_bytes) != ARCHIVE_OK) {
        throw Error(ExitCode::verify_failed, "pack " + path.string() + " is unreadable: " +
                                                 error_text(handle.get()));
    }
    archive_entry* entry = nullptr;
    for (;;) {
        int status = archive_read_next_header(handle.get(), &entry);
        if (status == ARCHIVE_EOF) {
            return;
        }
        if (status != ARCHIVE_OK) {
            throw Error(ExitCode::verify_failed, "pack " + path.string() + " is damaged: " +
                                                     error_text(handle.get()));
        }
        const char* name = archive_entry_pathname(entry);
        if (name == nullptr) {
            throw Error(ExitCode::verify_failed, "pack " + path.string() + " is damaged: a member without a name");
        }
        PackMember member;
        member.hex = name;
        member.size = static_cast<std::uint64_t>(archive_entry_size(entry));
        member.uid = static_cast<uid_t>(archive_entry_uid(entry));
        member.gid = static_cast<gid_t>(archive_entry_gid(entry));
        archive_entry_xattr_reset(entry);
        const char* xattr_name = nullptr;
        const void* value = nullptr;
        size_t value_size = 0;
        while (archive_entry_xattr_next(entry, &xattr_name, &value, &value_size) == ARCHIVE_OK) {
            member.xattrs.emplace_back(xattr_name, std::string(static_cast<const char*>(value), value_size));
        }
        MemberReader read = [&](char* buffer, std::size_t capacity) -> std::size_t {
            la_ssize_t n = archive_read_data(handle.get(), buffer, capacity);
            if (n < 0) {
                throw Error(ExitCode::verify_failed, "pack " + path.string() + ", member " + member.hex +
                                                         " is damaged: " + error_text(handle.get()));
            }
            return static_cast<std::size_t>(n);
        };
        on_member(member, read);
    }
}

} // namespace venvtx
