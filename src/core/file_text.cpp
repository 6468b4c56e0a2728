// read_file_text.
#include "venvtx/core/file_text.hpp"

#include "venvtx/core/unique_fd.hpp"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace venvtx {

std::optional<std::string> read_file_text(const std::filesystem::path& path, int& error) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st {};
    if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || S_ISDIR(st.st_mode)) {
        error = fd.valid() && S_ISDIR(st.st_mode) ? EISDIR : errno;
        return std::nullopt;
    }
    std::string text;
    text.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    for (;;) { // to the end, whatever fstat said (a file may grow while read)
        if (done == text.size()) {
            text.resize(text.size() + 4096);
        }
        ssize_t n = ::read(fd.get(), text.data() + done, text.size() - done);
        if (n < 0) {
            error = errno;
            return std::nullopt;
        }
        if (n == 0) {
            break;
        }
        done += static_cast<size_t>(n);
    }
    text.resize(done);
    return text;
}

std::optional<std::string> read_file_text(const std::filesystem::path& path) {
    int error = 0;
    return read_file_text(path, error);
}

} // namespace venvtx
