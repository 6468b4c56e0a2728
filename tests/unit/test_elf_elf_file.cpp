// Unit tests for the ELF reader: real cc-built libraries, hand-made images, truncation, garbage.
#include "venvtx/core/error.hpp"
#include "venvtx/elf/elf_file.hpp"

#include "temp_dir.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <elf.h>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using venvtx::ElfInfo;
using venvtx::ElfResult;
using venvtx::ElfStatus;
using venvtx::parse_elf;
using venvtx::read_elf_file;
using venvtx::test::TempDir;
using venvtx::test::write_file;

namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

namespace {

std::string read_all(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream content;
    content << in.rdbuf();
    return content.str();
}

// Runs `command` in `dir` through the shell; the test stops when it fails.
void shell(const fs::path& dir, const std::string& command) {
    std::string line = "cd '" + dir.string() + "' && " + command;
    REQUIRE_MESSAGE(std::system(line.c_str()) == 0, line);
}

constexpr const char* k_cc = "cc -shared -fPIC -Wl,--no-as-needed ";

// libfoo.so.1 (DT_RPATH, NODEFLIB) and libbar.so (DT_RUNPATH, NEEDED libfoo.so.1) in `dir`.
void build_libraries(const fs::path& dir) {
    write_file(dir / "foo.c", "#include <stdio.h>\nint foo(void) { return puts(\"foo\"); }\n");
    write_file(dir / "bar.c", "int foo(void);\nint bar(void) { return foo() + 1; }\n");
    shell(dir, std::string(k_cc) +
                   "-Wl,-soname,libfoo.so.1 -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/../lib' "
                   "-Wl,-rpath,/opt/vendor/lib -Wl,-z,nodefaultlib foo.c -o libfoo.so.1");
    shell(dir, std::string(k_cc) + "-Wl,-soname,libbar.so -Wl,--enable-new-dtags "
                                   "-Wl,-rpath,'$ORIGIN' bar.c -L. -l:libfoo.so.1 -o libbar.so");
}

std::uint16_t host_machine() {
#if defined(__x86_64__)
    return EM_X86_64;
#elif defined(__aarch64__)
    return EM_AARCH64;
#else
    return 0;
#endif
}

// What a hand-made image holds; the knobs damage it in one way each.
struct TinySpec {
    bool is_64 = true;
    bool big = false;
    bool dynamic = true;
    std::string runpath = "/b";
    std::uint64_t strtab_shift = 0;  // added to DT_STRTAB
    std::uint64_t strsz_cut = 0;     // taken from DT_STRSZ (48 bytes with runpath "/b")
    std::size_t padding_entries = 0; // DT_DEBUG entries before the real ones
};

// A minimal ET_DYN image: two PT_LOADs mapping different addresses, PT_DYNAMIC, .dynstr.
template <class Ehdr, class Phdr, class Dyn> std::string build_tiny(const TinySpec& spec) {
    bool swap = spec.big != (std::endian::native == std::endian::big);
    auto order = [swap](auto value) {
        using T = decltype(value);
        if (swap) {
            auto bytes = std::bit_cast<std::array<unsigned char, sizeof(T)>>(value);
            std::reverse(bytes.begin(), bytes.end());
            value = std::bit_cast<T>(bytes);
        }
        return value;
    };
    std::string strings = std::string(1, '\0') + "libtiny.so.2" + '\0' + "libc.so.6" + '\0' +
                          "libm.so.6" + '\0' + "$ORIGIN:/a" + '\0' + spec.runpath + '\0';
    std::vector<std::pair<std::int64_t, std::uint64_t>> entries(spec.padding_entries,
                                                                {DT_DEBUG, 0});
    std::size_t phnum = spec.dynamic ? 3 : 1;
    std::size_t dynamic_offset = sizeof(Ehdr) + phnum * sizeof(Phdr);
    std::size_t strtab_offset = dynamic_offset + (spec.padding_entries + 10) * sizeof(Dyn);
    std::uint64_t strtab_vaddr = 0x40000;
    entries.insert(entries.end(), {{DT_SONAME, 1},
                                   {DT_NEEDED, 14},
                                   {DT_NEEDED, 24},
                                   {DT_RPATH, 34},
                                   {DT_RUNPATH, 45},
                                   {DT_FLAGS_1, DF_1_NODEFLIB},
                                   {DT_STRTAB, strtab_vaddr + spec.strtab_shift},
                                   {DT_STRSZ, strings.size() - spec.strsz_cut},
                                   {DT_NULL, 0},
                                   {DT_NEEDED, 1}}); // after DT_NULL: never read

    Ehdr header = {};
    std::memcpy(header.e_ident, ELFMAG, SELFMAG);
    header.e_ident[EI_CLASS] = spec.is_64 ? ELFCLASS64 : ELFCLASS32;
    header.e_ident[EI_DATA] = spec.big ? ELFDATA2MSB : ELFDATA2LSB;
    header.e_ident[EI_VERSION] = EV_CURRENT;
    header.e_type = order(static_cast<decltype(header.e_type)>(ET_DYN));
    header.e_machine = order(static_cast<decltype(header.e_machine)>(EM_MIPS));
    header.e_phoff = order(static_cast<decltype(header.e_phoff)>(sizeof(Ehdr)));
    header.e_phentsize = order(static_cast<decltype(header.e_phentsize)>(sizeof(Phdr)));
    header.e_phnum = order(static_cast<decltype(header.e_phnum)>(phnum));

    std::vector<Phdr> segments(phnum, Phdr{});
    auto segment = [&](Phdr& p, std::uint32_t type, std::uint64_t offset, std::uint64_t vaddr,
                       std::uint64_t size) {
        p.p_type = order(static_cast<decltype(p.p_type)>(type));
        p.p_offset = order(static_cast<decltype(p.p_offset)>(offset));
        p.p_vaddr = order(static_cast<decltype(p.p_vaddr)>(vaddr));
        p.p_filesz = order(static_cast<decltype(p.p_filesz)>(size));
        p.p_memsz = p.p_filesz;
    };
    segment(segments[0], PT_LOAD, 0, 0x10000, strtab_offset);
    if (spec.dynamic) {
        segment(segments[1], PT_LOAD, strtab_offset, strtab_vaddr, strings.size());
        segment(segments[2], PT_DYNAMIC, dynamic_offset, 0x10000 + dynamic_offset,
                entries.size() * sizeof(Dyn));
    }

    std::string image(reinterpret_cast<const char*>(&header), sizeof header);
    image.append(reinterpret_cast<const char*>(segments.data()), segments.size() * sizeof(Phdr));
    if (spec.dynamic) {
        for (const auto& [tag, value] : entries) {
            Dyn entry = {};
            entry.d_tag = order(static_cast<decltype(entry.d_tag)>(tag));
            entry.d_un.d_val = order(static_cast<decltype(entry.d_un.d_val)>(value));
            image.append(reinterpret_cast<const char*>(&entry), sizeof entry);
        }
        image += strings;
    }
    return image;
}

std::string build_tiny(const TinySpec& spec) {
    if (spec.is_64) {
        return build_tiny<Elf64_Ehdr, Elf64_Phdr, Elf64_Dyn>(spec);
    }
    return build_tiny<Elf32_Ehdr, Elf32_Phdr, Elf32_Dyn>(spec);
}

bool is_known(ElfStatus status) {
    return status == ElfStatus::ok || status == ElfStatus::not_elf ||
           status == ElfStatus::malformed;
}

} // namespace

TEST_SUITE("parse_elf") {
    TEST_CASE("DT_RPATH, DT_SONAME and NODEFLIB of a real library") {
        TempDir dir;
        build_libraries(dir.path());
        ElfResult result = parse_elf(read_all(dir.path() / "libfoo.so.1"));
        REQUIRE_MESSAGE(result.status == ElfStatus::ok, result.problem);
        CHECK(result.problem.empty());
        CHECK(result.info.soname == "libfoo.so.1");
        CHECK(result.info.needed == Strings{"libc.so.6"});
        CHECK(result.info.rpath == Strings{"$ORIGIN/../lib", "/opt/vendor/lib"});
        CHECK(result.info.runpath.empty());
        CHECK(result.info.nodeflib);
        CHECK(result.info.is_64 == (sizeof(void*) == 8));
        if (host_machine() != 0) {
            CHECK(result.info.machine == host_machine());
        }
    }

    TEST_CASE("DT_RUNPATH and DT_NEEDED in link order") {
        TempDir dir;
        build_libraries(dir.path());
        ElfResult result = parse_elf(read_all(dir.path() / "libbar.so"));
        REQUIRE_MESSAGE(result.status == ElfStatus::ok, result.problem);
        CHECK(result.info.soname == "libbar.so");
        CHECK(result.info.needed == Strings{"libfoo.so.1", "libc.so.6"});
        CHECK(result.info.rpath.empty());
        CHECK(result.info.runpath == Strings{"$ORIGIN"});
        CHECK_FALSE(result.info.nodeflib);
    }

    TEST_CASE("a static executable is ok with empty fields") {
        TempDir dir;
        write_file(dir.path() / "main.c", "int main(void) { return 0; }\n");
        shell(dir.path(), "cc -static main.c -o app");
        ElfResult result = parse_elf(read_all(dir.path() / "app"));
        REQUIRE_MESSAGE(result.status == ElfStatus::ok, result.problem);
        CHECK(result.info.soname.empty());
        CHECK(result.info.needed.empty());
        CHECK(result.info.machine != 0);
    }

    TEST_CASE("hand-made images of each class and byte order") {
        for (bool is_64 : {false, true}) {
            for (bool big : {false, true}) {
                CAPTURE(is_64);
                CAPTURE(big);
                ElfResult result = parse_elf(build_tiny({.is_64 = is_64, .big = big}));
                REQUIRE_MESSAGE(result.status == ElfStatus::ok, result.problem);
                CHECK(result.info.is_64 == is_64);
                CHECK(result.info.machine == EM_MIPS);
                CHECK(result.info.soname == "libtiny.so.2");
                CHECK(result.info.needed == Strings{"libc.so.6", "libm.so.6"});
                CHECK(result.info.rpath == Strings{"$ORIGIN", "/a"});
                CHECK(result.info.runpath == Strings{"/b"});
                CHECK(result.info.nodeflib);
            }
        }
    }

    TEST_CASE("empty search-path components are kept") {
        ElfResult result = parse_elf(build_tiny({.big = true, .runpath = ":/x::"}));
        REQUIRE_MESSAGE(result.status == ElfStatus::ok, result.problem);
        CHECK(result.info.runpath == Strings{"", "/x", "", ""});
    }

    TEST_CASE("no PT_DYNAMIC is ok with empty fields") {
        ElfResult result = parse_elf(build_tiny({.is_64 = false, .dynamic = false}));
        REQUIRE_MESSAGE(result.status == ElfStatus::ok, result.problem);
        ElfInfo expected;
        expected.is_64 = false;
        expected.machine = EM_MIPS;
        CHECK(result.info == expected);
    }

    TEST_CASE("damaged string references are malformed, with a one-line problem") {
        std::string too_long(5000, 'r');
        for (const TinySpec& spec : {TinySpec{.strtab_shift = 0x100000}, TinySpec{.strsz_cut = 1},
                                     TinySpec{.strsz_cut = 47}, TinySpec{.runpath = too_long}}) {
            ElfResult result = parse_elf(build_tiny(spec));
            CAPTURE(result.problem);
            CHECK(result.status == ElfStatus::malformed);
            CHECK_FALSE(result.problem.empty());
            CHECK(result.problem.find('\n') == std::string::npos);
        }
    }

    TEST_CASE("dynamic entries past the cap are not processed") {
        ElfResult result = parse_elf(build_tiny({.padding_entries = 1 << 16}));
        REQUIRE_MESSAGE(result.status == ElfStatus::ok, result.problem);
        CHECK(result.info.needed.empty());
        CHECK(result.info.soname.empty());
    }

    TEST_CASE("every prefix of a real library parses to a status, never past its bytes") {
        TempDir dir;
        build_libraries(dir.path());
        std::string bytes = read_all(dir.path() / "libbar.so");
        ElfResult whole = parse_elf(bytes);
        REQUIRE(whole.status == ElfStatus::ok);
        int failures = 0;
        for (std::size_t length = 0; length < bytes.size(); length += length < 4096 ? 1 : 61) {
            // A copy, so AddressSanitizer would see a read past the prefix.
            std::string prefix = bytes.substr(0, length);
            ElfResult result = parse_elf(prefix);
            bool fine = is_known(result.status) &&
                        (length >= 4 || result.status == ElfStatus::not_elf) &&
                        (result.status != ElfStatus::ok || result.info == whole.info) &&
                        (result.status == ElfStatus::ok || !result.problem.empty());
            if (!fine && ++failures <= 5) {
                FAIL_CHECK("prefix of " << length << " bytes: " << result.problem);
            }
        }
        CHECK(failures == 0);
    }

    TEST_CASE("garbage is not_elf or malformed") {
        CHECK(parse_elf("").status == ElfStatus::not_elf);
        CHECK(parse_elf(std::string("\x7f") + "EL").status == ElfStatus::not_elf);
        CHECK(parse_elf("#!/bin/sh\necho hello\n").status == ElfStatus::not_elf);
        CHECK(parse_elf(std::string("\x7f") + "ELF").status == ElfStatus::malformed);
        std::mt19937_64 random(7);
        for (int i = 0; i < 2000; ++i) {
            std::string bytes(random() % 600, '\0');
            for (char& c : bytes) {
                c = static_cast<char>(random());
            }
            if (i % 2 == 0 && bytes.size() >= 6) { // a plausible identification, random rest
                bytes.replace(0, 4, std::string("\x7f") + "ELF");
                bytes[EI_CLASS] = static_cast<char>(1 + random() % 2);
                bytes[EI_DATA] = static_cast<char>(1 + random() % 2);
            }
            ElfResult result = parse_elf(bytes);
            CHECK(is_known(result.status));
        }
    }
}

TEST_SUITE("read_elf_file") {
    TEST_CASE("matches parse_elf of the whole file") {
        TempDir dir;
        build_libraries(dir.path());
        std::string truncated = read_all(dir.path() / "libfoo.so.1").substr(0, 3000);
        write_file(dir.path() / "truncated.so", truncated);
        write_file(dir.path() / "empty.so", "");
        write_file(dir.path() / "text.so", "INPUT(libfoo.so.1)\n");
        for (const char* name :
             {"libfoo.so.1", "libbar.so", "truncated.so", "empty.so", "text.so"}) {
            CAPTURE(name);
            ElfResult expected = parse_elf(read_all(dir.path() / name));
            ElfResult actual = read_elf_file(dir.path() / name);
            CHECK(actual.status == expected.status);
            CHECK(actual.info == expected.info);
            CHECK(actual.problem == expected.problem);
        }
        CHECK(read_elf_file(dir.path() / "truncated.so").status == ElfStatus::malformed);
    }

    TEST_CASE("a 4 GiB sparse file parses without being loaded") {
        TempDir dir;
        build_libraries(dir.path());
        fs::path big = dir.path() / "libbig.so";
        fs::copy_file(dir.path() / "libbar.so", big);
        fs::resize_file(big, std::uint64_t{1} << 32);
        ElfResult result = read_elf_file(big);
        REQUIRE_MESSAGE(result.status == ElfStatus::ok, result.problem);
        CHECK(result.info.needed == Strings{"libfoo.so.1", "libc.so.6"});
    }

    TEST_CASE("a directory is not_elf; a missing file throws") {
        TempDir dir;
        CHECK(read_elf_file(dir.path()).status == ElfStatus::not_elf);
        CHECK_THROWS_AS(read_elf_file(dir.path() / "missing.so"), venvtx::Error);
    }
}
