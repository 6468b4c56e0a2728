// What a trapped system call is about to change: its syscall number and arguments decoded
// into paths (read from the stopped process's memory, resolved as its own call resolves them:
// core/caller_path). The kernel then makes the call itself.
#pragma once

#include "venvtx/core/mutation_trap.hpp"

#include <array>
#include <cstdint>
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

// Throws Error when the process's memory cannot be read (it may have died).
std::vector<PendingChange> decode_call(const TrappedCall& call);

} // namespace venvtx
