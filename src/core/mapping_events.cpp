// MappingEvents: perf dummy events with mmap records, one ring buffer per CPU, drained by a thread.
#include "venvtx/core/mapping_events.hpp"

#include "venvtx/core/file_text.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <linux/perf_event.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace venvtx {

namespace {

constexpr std::size_t k_data_pages = 16; // 64 KiB a CPU: a few hundred mappings between two reads
constexpr int k_read_interval_ms = 50;

// The CPUs the kernel lists as online ("0-3,6,8-9").
std::vector<int> online_cpus() {
    std::vector<int> cpus;
    auto text = read_file_text("/sys/devices/system/cpu/online");
    for (const char* at = text ? text->c_str() : ""; *at != '\0' && *at != '\n';) {
        char* end = nullptr;
        long first = std::strtol(at, &end, 10);
        if (end == at) {
            break;
        }
        long last = *end == '-' ? std::strtol(end + 1, &end, 10) : first;
        for (long cpu = first; cpu <= last; ++cpu) {
            cpus.push_back(static_cast<int>(cpu));
        }
        at = *end == ',' ? end + 1 : end;
    }
    return cpus;
}

int open_event(pid_t pid, int cpu, std::size_t data_size) {
    perf_event_attr attr{};
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_DUMMY;
    attr.mmap = 1; // executable mappings only: a library always has one
    attr.inherit = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    attr.watermark = 1;
    attr.wakeup_watermark = static_cast<std::uint32_t>(data_size / 2);
    return static_cast<int>(::syscall(SYS_perf_event_open, &attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC));
}

// Whether rings of `bytes` leave a user without CAP_IPC_LOCK half of the locked memory perf
// allows each user (perf_event_mlock_kb), so that a job's own `perf record` still has its share.
bool within_user_budget(std::size_t bytes) {
    if (::geteuid() == 0) {
        return true;
    }
    auto text = read_file_text("/proc/sys/kernel/perf_event_mlock_kb");
    long budget_kb = text ? std::atol(text->c_str()) : 0;
    return bytes / 1024 <= static_cast<std::size_t>(std::max(0L, budget_kb)) / 2;
}

// Copies `size` bytes at `offset` out of a ring of `data_size` bytes (a power of two).
void copy_out(const char* data, std::size_t data_size, std::uint64_t offset, void* to, std::size_t size) {
    std::size_t at = offset & (data_size - 1);
    std::size_t first = std::min(size, data_size - at);
    std::memcpy(to, data + at, first);
    std::memcpy(static_cast<char*>(to) + first, data, size - first);
}

} // namespace

std::unique_ptr<MappingEvents> MappingEvents::follow(pid_t pid) noexcept {
    try {
        const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
        std::vector<int> cpus = online_cpus();
        if (cpus.empty() || !within_user_budget(cpus.size() * (1 + k_data_pages) * page)) {
            return nullptr;
        }
        std::unique_ptr<MappingEvents> events(new MappingEvents());
        for (int cpu : cpus) {
            Ring ring;
            ring.fd = UniqueFd(open_event(pid, cpu, k_data_pages * page));
            if (!ring.fd.valid()) {
                return nullptr;
            }
            ring.size = (1 + k_data_pages) * page;
            ring.base = ::mmap(nullptr, ring.size, PROT_READ | PROT_WRITE, MAP_SHARED, ring.fd.get(), 0);
            if (ring.base == MAP_FAILED) {
                return nullptr;
            }
            events->m_rings.push_back(std::move(ring));
        }
        events->m_stop = UniqueFd(::eventfd(0, EFD_CLOEXEC));
        if (!events->m_stop.valid()) {
            return nullptr;
        }
        events->m_reader = std::thread([raw = events.get()] { raw->drain_until_stopped(); });
        return events;
    } catch (const std::exception&) { // no thread, no memory: the job is sampled as before
        return nullptr;
    }
}

MappingEvents::~MappingEvents() {
    if (m_reader.joinable()) {
        finish();
    }
    for (auto& ring : m_rings) {
        if (ring.base != nullptr && ring.base != MAP_FAILED) {
            ::munmap(ring.base, ring.size);
        }
    }
}

std::set<std::string> MappingEvents::finish() {
    if (m_reader.joinable()) {
        std::uint64_t one = 1;
        (void)!::write(m_stop.get(), &one, sizeof one);
        m_reader.join();
    }
    std::lock_guard<std::mutex> guard(m_mutex);
    return m_files;
}

void MappingEvents::drain_until_stopped() {
    std::vector<pollfd> watched;
    for (const auto& ring : m_rings) {
        watched.push_back({ring.fd.get(), POLLIN, 0});
    }
    watched.push_back({m_stop.get(), POLLIN, 0});
    for (;;) {
        int ready = ::poll(watched.data(), watched.size(), k_read_interval_ms);
        for (auto& ring : m_rings) {
            drain(ring); // every record written so far, the last ones included once stopped
        }
        if (ready <= 0) {
            continue;
        }
        for (std::size_t i = 0; i + 1 < watched.size(); ++i) {
            if ((watched[i].revents & (POLLHUP | POLLERR)) != 0) {
                watched[i].fd = -1; // no process carries its event now: polled again, it would spin
            }
        }
        if ((watched.back().revents & POLLIN) != 0) {
            return;
        }
    }
}

void MappingEvents::drain(Ring& ring) {
    auto* meta = static_cast<perf_event_mmap_page*>(ring.base);
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t data_size = ring.size - page;
    const char* data = static_cast<const char*>(ring.base) + page;
    std::uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    std::uint64_t tail = meta->data_tail;
    std::set<std::string> files;
    std::string record;
    while (tail < head) {
        perf_event_header header{};
        copy_out(data, data_size, tail, &header, sizeof header);
        if (header.size < sizeof header || header.size > head - tail) {
            tail = head; // cannot happen with a sane kernel: skip what cannot be read, not the rest
            break;
        }
        record.resize(header.size);
        copy_out(data, data_size, tail, record.data(), header.size);
        // PERF_RECORD_MMAP: header, pid and tid (u32 each), addr, len, pgoff (u64 each), filename.
        constexpr std::size_t k_name_at = sizeof(perf_event_header) + 2 * sizeof(std::uint32_t) + 3 * sizeof(std::uint64_t);
        if (header.type == PERF_RECORD_MMAP && record.size() > k_name_at) {
            std::string name(record.c_str() + k_name_at, ::strnlen(record.c_str() + k_name_at, record.size() - k_name_at));
            if (!name.empty() && name.front() == '/') {
                files.insert(std::move(name));
            }
        }
        tail += header.size;
    }
    __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
    std::lock_guard<std::mutex> guard(m_mutex);
    m_files.insert(files.begin(), files.end());
}

} // namespace venvtx
