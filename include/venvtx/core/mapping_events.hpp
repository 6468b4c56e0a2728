// MappingEvents: the files a process tree maps for execution, as the kernel reports each mmap.
#pragma once

#include "venvtx/core/unique_fd.hpp"

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <sys/types.h>
#include <thread>
#include <vector>

namespace venvtx {

// perf_event_open(2): a software dummy event per online CPU on one process, inherited by every
// process it starts from then on, writing a record of each executable file mapping (a program,
// a library, an extension module) to a ring buffer that a thread drains. Unlike
// /proc/<pid>/maps, a mapping is seen even when its process unmaps it or executes another
// program before anyone reads its maps. Nothing in the job changes: no ptrace, no seccomp, so
// it may trace its own children and install its own filters. The kernel takes the events off a
// process that executes a setuid, setgid or unreadable program, and so off what it starts.
class MappingEvents {
  public:
    // Follows `pid` (best before it runs); nullptr where the kernel refuses (perf_event_paranoid
    // for a user without CAP_PERFMON, a seccomp profile, the locked-memory limit) or where the
    // rings would take more than half of a non-root user's perf_event_mlock_kb.
    static std::unique_ptr<MappingEvents> follow(pid_t pid) noexcept;
    ~MappingEvents();
    MappingEvents(const MappingEvents&) = delete;
    MappingEvents& operator=(const MappingEvents&) = delete;

    // Stops following and returns every file mapped for execution so far, as absolute paths
    // (less any the kernel dropped when a buffer was full).
    std::set<std::string> finish();

  private:
    struct Ring {
        UniqueFd fd;
        void* base = nullptr;
        std::size_t size = 0;
    };
    MappingEvents() = default;
    void drain_until_stopped();
    void drain(Ring& ring);

    std::vector<Ring> m_rings;
    UniqueFd m_stop;
    std::thread m_reader;
    std::mutex m_mutex;
    std::set<std::string> m_files;
};

} // namespace venvtx
