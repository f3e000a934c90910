// Large CPU tensors on transparent huge pages.
//
// LibTorch's default CPU allocator takes large blocks from malloc, which maps
// fresh memory for each of them (glibc maps anything over 32 MiB; smaller
// blocks too until its threshold adapts) and touches it 4 KiB page by page:
// one page fault per 4 KiB. The 64 MiB output of a 65,536-token, 4-head
// attention is 16,384 faults, measured at about 7% of the call. Mapped
// 2 MiB-aligned with MADV_HUGEPAGE, the same block takes 32 faults. Freed
// blocks are kept for reuse up to a bound, so that a server answering calls
// of similar sizes neither faults nor zeroes pages again.
//
// Implementation detail of the CPU runtime set-up (favor-server, benchmarks):
// call it once at start-up, next to ConfigureCpuParallelism.
#ifndef FAVOR_SERVER_ATTENTION_CPU_ALLOCATOR_H_
#define FAVOR_SERVER_ATTENTION_CPU_ALLOCATOR_H_

#include <cstdint>

namespace favor::attention {

struct HugePageAllocatorOptions {
  // Allocations of at least this many bytes are mapped on their own,
  // 2 MiB-aligned, with MADV_HUGEPAGE; smaller ones go to LibTorch's
  // default allocator. At least 2 MiB.
  int64_t min_bytes = int64_t{4} << 20;
  // Freed large blocks kept for reuse, at most this many bytes in all; a
  // block is reused for a request of at least half its size. 0 returns
  // every block to the kernel at once.
  int64_t max_cached_bytes = int64_t{256} << 20;
};

// What InstallHugePageCpuAllocator did.
enum class HugePageAllocatorState {
  kInstalled,         // now LibTorch's CPU allocator
  kAlreadyInstalled,  // by an earlier call (the options of that call hold)
  kUnavailable,       // transparent huge pages are off ("never") or absent
};

// Makes LibTorch's CPU allocator one that maps large allocations on
// transparent huge pages, when the kernel offers them ("always" or
// "madvise" in /sys/kernel/mm/transparent_hugepage/enabled). Process-wide;
// call before tensors are made (tensors made earlier are freed correctly
// either way).
HugePageAllocatorState InstallHugePageCpuAllocator(
    const HugePageAllocatorOptions& options = {});

// Returns the freed blocks kept for reuse to the kernel; returns how many
// bytes that was (0 without the allocator).
int64_t ReleaseCachedHugePages();

}  // namespace favor::attention

#endif  // FAVOR_SERVER_ATTENTION_CPU_ALLOCATOR_H_
