// What a trapped system call is about to change: its syscall number and arguments decoded
// into paths (read from the stopped process's memory once, made absolute against its working
// directory or directory descriptor, their directories resolved), and, for the calls that
// lose bytes, how venvtx makes the call itself on those very paths.
#pragma once

#include "venvtx/core/emulated_call.hpp"
#include "venvtx/core/mutation_trap.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <sys/types.h>
#include <vector>

namespace venvtx {

struct TrappedCall {
    pid_t pid = 0;
    int number = 0;
    std::array<std::uint64_t, 6> args{};
};

// The system calls the filter traps (x86_64 numbers); open and openat only when writing.
const std::vector<int>& trapped_syscalls();

struct DecodedCall {
    std::vector<PendingChange> changes;
    std::optional<Emulation> emulation;  // none: the kernel makes the call once it goes on
};

// Throws Error when the process's memory or descriptors cannot be read (it may have died).
DecodedCall decode_call(const TrappedCall& call);

} // namespace venvtx
