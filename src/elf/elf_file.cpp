// One bounds-checked ELF dynamic-section parser over a random-access byte source (memory or pread).
#include "venvtx/elf/elf_file.hpp"

#include "byte_source.hpp"
#include "venvtx/core/error.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <optional>
#include <sys/stat.h>
#include <type_traits>
#include <unistd.h>

namespace venvtx {

namespace {

using elf_detail::ByteSource;
using elf_detail::FileSource;
using elf_detail::in_bounds;
using elf_detail::MemorySource;

constexpr std::uint64_t k_max_dynamic_entries = 1 << 16;
constexpr std::uint64_t k_max_string_length = 4096;
constexpr std::uint64_t k_max_string_bytes = 1 << 20; // all strings of one file together

// Converts the file's byte order to the host's.
class ByteOrder {
public:
    explicit ByteOrder(bool swap = false) : m_swap(swap) {}
    template <class T> T operator()(T value) const {
        static_assert(std::is_integral_v<T>);
        using U = std::make_unsigned_t<T>;
        auto bits = static_cast<U>(value);
        if (m_swap) {
            if constexpr (sizeof(T) == 2) {
                bits = __builtin_bswap16(bits);
            } else if constexpr (sizeof(T) == 4) {
                bits = __builtin_bswap32(bits);
            } else if constexpr (sizeof(T) == 8) {
                bits = __builtin_bswap64(bits);
            }
        }
        return static_cast<T>(bits);
    }

private:
    bool m_swap;
};

// The class-independent views of the three records we read.
struct Header {
    std::uint16_t type = 0;
    std::uint16_t machine = 0;
    std::uint64_t phoff = 0;
    std::uint16_t phentsize = 0;
    std::uint16_t phnum = 0;
};
struct Segment {
    std::uint32_t type = 0;
    std::uint64_t offset = 0;
    std::uint64_t vaddr = 0;
    std::uint64_t filesz = 0;
};
struct DynEntry {
    std::int64_t tag = 0;
    std::uint64_t value = 0;
};

template <class Ehdr> void convert(const Ehdr& raw, ByteOrder d, Header& out) {
    out = {d(raw.e_type), d(raw.e_machine), d(raw.e_phoff), d(raw.e_phentsize), d(raw.e_phnum)};
}
template <class Phdr> void convert(const Phdr& raw, ByteOrder d, Segment& out) {
    out = {d(raw.p_type), d(raw.p_offset), d(raw.p_vaddr), d(raw.p_filesz)};
}
template <class Dyn> void convert(const Dyn& raw, ByteOrder d, DynEntry& out) {
    out = {d(raw.d_tag), d(raw.d_un.d_val)};
}

// What PT_DYNAMIC refers to, before the strings are read.
struct DynamicRefs {
    std::optional<std::uint64_t> strtab;
    std::optional<std::uint64_t> strsz;
    std::optional<std::uint64_t> soname;
    std::vector<std::uint64_t> needed;
    std::vector<std::uint64_t> rpath;
    std::vector<std::uint64_t> runpath;
    std::uint64_t flags_1 = 0;
};

// Appends the ':'-separated components of `text`; an empty string has none.
void append_split(std::string_view text, std::vector<std::string>& out) {
    if (text.empty()) {
        return;
    }
    std::size_t start = 0;
    while (true) {
        std::size_t colon = text.find(':', start);
        out.emplace_back(text.substr(start, colon == text.npos ? text.npos : colon - start));
        if (colon == text.npos) {
            return;
        }
        start = colon + 1;
    }
}

class Parser {
public:
    explicit Parser(ByteSource& source) : m_source(source) {}
    ElfResult run();

private:
    // Reads one Raw64 or Raw32 record (by class) at `offset` of `source` into `out`.
    template <class Raw64, class Raw32, class Out>
    bool read_record(ByteSource& source, std::uint64_t offset, Out& out) {
        if (m_64) {
            Raw64 raw;
            if (!source.read(offset, &raw, sizeof raw)) {
                return false;
            }
            convert(raw, m_decode, out);
        } else {
            Raw32 raw;
            if (!source.read(offset, &raw, sizeof raw)) {
                return false;
            }
            convert(raw, m_decode, out);
        }
        return true;
    }

    bool read_segments(const Header& header);
    bool read_dynamic(const Segment& dynamic, DynamicRefs& refs);
    bool read_strings(const DynamicRefs& refs);
    bool read_string(std::uint64_t name, std::string& out);

    ElfResult fail(ElfStatus status, std::string problem) {
        m_result.status = status;
        m_result.problem = std::move(problem);
        return std::move(m_result);
    }
    bool problem(std::string text) {
        m_problem = std::move(text);
        return false;
    }

    ByteSource& m_source;
    bool m_64 = true;
    ByteOrder m_decode;
    std::vector<Segment> m_loads;
    std::optional<Segment> m_dynamic;
    std::uint64_t m_strtab_offset = 0;
    std::uint64_t m_strtab_size = 0;
    std::uint64_t m_string_bytes = 0;
    std::string m_problem;
    ElfResult m_result;
};

ElfResult Parser::run() {
    unsigned char ident[EI_NIDENT] = {};
    if (!m_source.read(0, ident, SELFMAG) || std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
        return fail(ElfStatus::not_elf, "not an ELF file (no \\x7fELF magic)");
    }
    if (!m_source.read(0, ident, EI_NIDENT)) {
        return fail(ElfStatus::malformed, "truncated ELF identification");
    }
    if (ident[EI_CLASS] != ELFCLASS32 && ident[EI_CLASS] != ELFCLASS64) {
        return fail(ElfStatus::malformed, "unknown ELF class " + std::to_string(ident[EI_CLASS]));
    }
    if (ident[EI_DATA] != ELFDATA2LSB && ident[EI_DATA] != ELFDATA2MSB) {
        return fail(ElfStatus::malformed,
                    "unknown ELF data encoding " + std::to_string(ident[EI_DATA]));
    }
    m_64 = ident[EI_CLASS] == ELFCLASS64;
    bool little = ident[EI_DATA] == ELFDATA2LSB;
    m_decode = ByteOrder(little != (std::endian::native == std::endian::little));
    m_result.info.is_64 = m_64;

    Header header;
    if (!read_record<Elf64_Ehdr, Elf32_Ehdr>(m_source, 0, header)) {
        return fail(ElfStatus::malformed, "truncated ELF header");
    }
    m_result.info.machine = header.machine;
    if (header.type != ET_DYN && header.type != ET_EXEC) {
        m_result.status = ElfStatus::ok; // object files and cores name no libraries
        return std::move(m_result);
    }
    DynamicRefs refs;
    if (!read_segments(header) || (m_dynamic && !read_dynamic(*m_dynamic, refs)) ||
        !read_strings(refs)) {
        return fail(ElfStatus::malformed, m_problem);
    }
    m_result.info.nodeflib = (refs.flags_1 & DF_1_NODEFLIB) != 0;
    m_result.status = ElfStatus::ok;
    return std::move(m_result);
}

bool Parser::read_segments(const Header& header) {
    if (header.phnum == 0) {
        return true;
    }
    if (header.phnum == PN_XNUM) {
        return problem("extended program header count (PN_XNUM) is not supported");
    }
    std::size_t entry_size = m_64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
    if (header.phentsize < entry_size) {
        return problem("e_phentsize " + std::to_string(header.phentsize) + " is too small");
    }
    if (header.phoff > m_source.size()) {
        return problem("program headers start past the end of the file");
    }
    for (std::uint64_t i = 0; i < header.phnum; ++i) {
        Segment segment;
        if (!read_record<Elf64_Phdr, Elf32_Phdr>(m_source, header.phoff + i * header.phentsize,
                                                 segment)) {
            return problem("program header " + std::to_string(i) +
                           " runs past the end of the file");
        }
        if (segment.type == PT_LOAD) {
            m_loads.push_back(segment);
        } else if (segment.type == PT_DYNAMIC && !m_dynamic) {
            m_dynamic = segment;
        }
    }
    return true;
}

bool Parser::read_dynamic(const Segment& dynamic, DynamicRefs& refs) {
    std::uint64_t entry_size = m_64 ? sizeof(Elf64_Dyn) : sizeof(Elf32_Dyn);
    std::uint64_t count = std::min(dynamic.filesz / entry_size, k_max_dynamic_entries);
    if (!in_bounds(dynamic.offset, count * entry_size, m_source.size())) {
        return problem("PT_DYNAMIC runs past the end of the file");
    }
    std::string table(count * entry_size, '\0');
    if (!m_source.read(dynamic.offset, table.data(), table.size())) {
        return problem("PT_DYNAMIC runs past the end of the file");
    }
    MemorySource entries(table);
    for (std::uint64_t i = 0; i < count; ++i) {
        DynEntry entry;
        read_record<Elf64_Dyn, Elf32_Dyn>(entries, i * entry_size, entry);
        switch (entry.tag) {
        case DT_NULL:
            return true;
        case DT_STRTAB:
            refs.strtab = entry.value;
            break;
        case DT_STRSZ:
            refs.strsz = entry.value;
            break;
        case DT_SONAME:
            refs.soname = entry.value;
            break;
        case DT_NEEDED:
            refs.needed.push_back(entry.value);
            break;
        case DT_RPATH:
            refs.rpath.push_back(entry.value);
            break;
        case DT_RUNPATH:
            refs.runpath.push_back(entry.value);
            break;
        case DT_FLAGS_1:
            refs.flags_1 = entry.value;
            break;
        default:
            break;
        }
    }
    return true;
}

bool Parser::read_strings(const DynamicRefs& refs) {
    if (!refs.soname && refs.needed.empty() && refs.rpath.empty() && refs.runpath.empty()) {
        return true;
    }
    if (!refs.strtab) {
        return problem("PT_DYNAMIC names strings but has no DT_STRTAB");
    }
    auto load = std::find_if(m_loads.begin(), m_loads.end(), [&](const Segment& segment) {
        return segment.vaddr <= *refs.strtab && *refs.strtab - segment.vaddr < segment.filesz;
    });
    if (load == m_loads.end()) {
        return problem("DT_STRTAB address lies in no PT_LOAD segment");
    }
    std::uint64_t into = *refs.strtab - load->vaddr;
    if (!in_bounds(load->offset, into, m_source.size())) {
        return problem("DT_STRTAB lies past the end of the file");
    }
    m_strtab_offset = load->offset + into;
    m_strtab_size = std::min(refs.strsz.value_or(UINT64_MAX), load->filesz - into);

    ElfInfo& info = m_result.info;
    if (refs.soname && !read_string(*refs.soname, info.soname)) {
        return false;
    }
    std::string text;
    for (std::uint64_t name : refs.needed) {
        if (!read_string(name, text)) {
            return false;
        }
        info.needed.push_back(std::move(text));
    }
    for (std::uint64_t name : refs.rpath) {
        if (!read_string(name, text)) {
            return false;
        }
        append_split(text, info.rpath);
    }
    for (std::uint64_t name : refs.runpath) {
        if (!read_string(name, text)) {
            return false;
        }
        append_split(text, info.runpath);
    }
    return true;
}

bool Parser::read_string(std::uint64_t name, std::string& out) {
    if (name >= m_strtab_size) {
        return problem("string offset " + std::to_string(name) + " lies outside DT_STRSZ " +
                       std::to_string(m_strtab_size));
    }
    if (!in_bounds(m_strtab_offset, name, m_source.size())) {
        return problem("string at offset " + std::to_string(name) +
                       " lies past the end of the file");
    }
    std::uint64_t start = m_strtab_offset + name;
    std::uint64_t window =
        std::min({m_strtab_size - name, m_source.size() - start, k_max_string_length + 1});
    std::string buffer(window, '\0');
    if (!m_source.read(start, buffer.data(), buffer.size())) {
        return problem("string at offset " + std::to_string(name) +
                       " lies past the end of the file");
    }
    std::size_t end = buffer.find('\0');
    if (end == buffer.npos) {
        return problem(
            "string at offset " + std::to_string(name) +
            (window > k_max_string_length ? " is longer than 4096 bytes" : " is not terminated"));
    }
    m_string_bytes += end;
    if (m_string_bytes > k_max_string_bytes) {
        return problem("dynamic strings exceed 1 MiB in all");
    }
    buffer.resize(end);
    out = std::move(buffer);
    return true;
}

} // namespace

ElfResult parse_elf(std::string_view bytes) {
    MemorySource source(bytes);
    return Parser(source).run();
}

ElfResult read_elf_file(const std::filesystem::path& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        throw system_error("open " + path.string(), errno);
    }
    struct stat status = {};
    if (::fstat(fd, &status) != 0) {
        int err = errno;
        ::close(fd);
        throw system_error("stat " + path.string(), err);
    }
    FileSource source(fd, static_cast<std::uint64_t>(status.st_size), path.string());
    if (!S_ISREG(status.st_mode)) {
        ElfResult result;
        result.problem = "not a regular file";
        return result;
    }
    return Parser(source).run();
}

} // namespace venvtx
