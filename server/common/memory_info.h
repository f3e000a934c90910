// How much memory the machine and the container give the process, and how
// much it holds, as Linux reports them: /proc/meminfo (MemTotal), the cgroup
// limit (v2: /sys/fs/cgroup/memory.max; v1:
// /sys/fs/cgroup/memory/memory.limit_in_bytes) and /proc/self/status
// (VmRSS, VmHWM). favor-server's memory budget (--max_memory_bytes) starts
// from these. The Parse functions take the files' text, for tests.
#ifndef FAVOR_SERVER_COMMON_MEMORY_INFO_H_
#define FAVOR_SERVER_COMMON_MEMORY_INFO_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace favor {

// Where the numbers are read from; tests point them elsewhere.
struct MemoryInfoPaths {
  std::string meminfo = "/proc/meminfo";
  std::string cgroup_v2_max = "/sys/fs/cgroup/memory.max";
  std::string cgroup_v1_limit = "/sys/fs/cgroup/memory/memory.limit_in_bytes";
  std::string status = "/proc/self/status";
};

// The memory the process may use: the smaller of the machine's (MemTotal)
// and the cgroup's limit (v2, else v1; "max" or v1's huge "unlimited"
// value: none). NOT_FOUND or INVALID_ARGUMENT when /proc/meminfo cannot be
// read or parsed; a missing or unreadable cgroup file means no limit.
absl::StatusOr<int64_t> AvailableMemoryBytes(const MemoryInfoPaths& paths = {});

// A field of /proc/self/status in bytes ("VmRSS", "VmHWM").
absl::StatusOr<int64_t> ProcessMemoryBytes(absl::string_view field,
                                           const MemoryInfoPaths& paths = {});

// "MemTotal:  16314412 kB" (one line of /proc/meminfo's text) in bytes.
absl::StatusOr<int64_t> ParseMemTotal(absl::string_view meminfo);
// A cgroup limit file's text: the limit in bytes, or nullopt for none ("max",
// or a v1 value of 2^60 or more, its "unlimited").
absl::StatusOr<std::optional<int64_t>> ParseCgroupLimit(absl::string_view text);
// Gives the memory that the allocator holds but no longer uses back to the
// system (glibc's malloc_trim), so that what a model load freed (a refused
// tokenizer's parsed JSON, a replaced revision) leaves VmRSS, which the
// memory budget counts. Takes milliseconds: for after a load, not per call.
void ReleaseFreedHeapMemory();

// `field` ("VmRSS") of /proc/PID/status's text, in bytes.
absl::StatusOr<int64_t> ParseStatusField(absl::string_view status,
                                         absl::string_view field);

}  // namespace favor

#endif  // FAVOR_SERVER_COMMON_MEMORY_INFO_H_
