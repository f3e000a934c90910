#include "server/attention/cpu_allocator.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "server/attention/torch_compat.h"

namespace favor::attention {
namespace {

constexpr uintptr_t kHugePageBytes = uintptr_t{2} << 20;

uintptr_t RoundUp(uintptr_t n, uintptr_t to) { return (n + to - 1) / to * to; }

// The mode in brackets in /sys/kernel/mm/transparent_hugepage/enabled
// ("always [madvise] never"), or "" when the file is absent.
std::string TransparentHugePageMode() {
  std::ifstream file("/sys/kernel/mm/transparent_hugepage/enabled");
  const std::string text((std::istreambuf_iterator<char>(file)),
                         std::istreambuf_iterator<char>());
  const size_t open = text.find('[');
  const size_t close = text.find(']', open);
  if (open == std::string::npos || close == std::string::npos) return "";
  return text.substr(open + 1, close - open - 1);
}

// Large blocks are mappings of their own, recorded here so that one deleter
// (which sees only the data pointer, as raw_deleter() requires) frees both
// kinds of block.
class HugePageAllocator final : public torch_compat::Allocator {
 public:
  HugePageAllocator(c10::Allocator* fallback, uintptr_t min_bytes,
                    uintptr_t max_cached_bytes)
      : fallback_(fallback),
        min_bytes_(min_bytes),
        max_cached_bytes_(max_cached_bytes) {}

  c10::DataPtr Allocate(size_t n) const override {
    if (n < min_bytes_) return fallback_->allocate(n);
    const uintptr_t length = RoundUp(n, kHugePageBytes);
    if (void* reused = TakeCached(length)) {
      return {reused, reused, &Free, c10::Device(c10::DeviceType::CPU)};
    }
    // Map one huge page more than needed and trim to an aligned range.
    void* raw = mmap(nullptr, length + kHugePageBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    // Out of address space: the default allocator reports it its own way.
    if (raw == MAP_FAILED) return fallback_->allocate(n);
    const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t begin = RoundUp(start, kHugePageBytes);
    const uintptr_t end = start + length + kHugePageBytes;
    if (begin > start) munmap(raw, begin - start);
    if (end > begin + length) {
      munmap(reinterpret_cast<void*>(begin + length), end - (begin + length));
    }
    void* data = reinterpret_cast<void*>(begin);
    // Best effort: without huge pages the block is still a valid mapping.
    madvise(data, length, MADV_HUGEPAGE);
    {
      absl::MutexLock lock(&mu_);
      mappings_[data] = length;
    }
    return {data, data, &Free, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &Free; }

  static HugePageAllocator* Instance() { return instance_; }
  static void SetInstance(HugePageAllocator* allocator) {
    instance_ = allocator;
  }

  // Unmaps every cached block; returns their bytes.
  uintptr_t ReleaseCached() const {
    std::multimap<uintptr_t, void*> released;
    {
      absl::MutexLock lock(&mu_);
      released.swap(cached_);
      cached_bytes_ = 0;
    }
    uintptr_t bytes = 0;
    for (const auto& [length, data] : released) {
      munmap(data, length);
      bytes += length;
    }
    return bytes;
  }

 private:
  // A cached block of at least `length` bytes and at most twice that, now
  // in use again; null when there is none.
  void* TakeCached(uintptr_t length) const {
    absl::MutexLock lock(&mu_);
    const auto it = cached_.lower_bound(length);
    if (it == cached_.end() || it->first > 2 * length) return nullptr;
    void* data = it->second;
    cached_bytes_ -= it->first;
    mappings_[data] = it->first;
    cached_.erase(it);
    return data;
  }

  static void Free(void* data) {
    HugePageAllocator* self = Instance();
    uintptr_t length = 0;
    {
      absl::MutexLock lock(&self->mu_);
      const auto it = self->mappings_.find(data);
      if (it != self->mappings_.end()) {
        length = it->second;
        self->mappings_.erase(it);
        if (self->cached_bytes_ + length <= self->max_cached_bytes_) {
          self->cached_.emplace(length, data);
          self->cached_bytes_ += length;
          return;
        }
      }
    }
    if (length > 0) {
      munmap(data, length);
    } else {
      self->fallback_->raw_deleter()(data);
    }
  }

  static inline HugePageAllocator* instance_ = nullptr;

  c10::Allocator* const fallback_;
  const uintptr_t min_bytes_;
  const uintptr_t max_cached_bytes_;
  mutable absl::Mutex mu_;
  // Blocks in use, by address: their mapped length.
  mutable absl::flat_hash_map<void*, uintptr_t> mappings_ ABSL_GUARDED_BY(mu_);
  // Freed blocks kept for reuse, by length.
  mutable std::multimap<uintptr_t, void*> cached_ ABSL_GUARDED_BY(mu_);
  mutable uintptr_t cached_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

HugePageAllocatorState InstallHugePageCpuAllocator(
    const HugePageAllocatorOptions& options) {
  static absl::Mutex mu;
  absl::MutexLock lock(&mu);
  if (HugePageAllocator::Instance() != nullptr) {
    return HugePageAllocatorState::kAlreadyInstalled;
  }
  const std::string mode = TransparentHugePageMode();
  if (mode != "always" && mode != "madvise") {
    return HugePageAllocatorState::kUnavailable;
  }
  // The default allocator keeps serving small blocks (and frees what it
  // handed out before); it needs a raw deleter for Free's fallback.
  c10::Allocator* fallback = c10::GetCPUAllocator();
  if (fallback->raw_deleter() == nullptr) {
    return HugePageAllocatorState::kUnavailable;
  }
  const uintptr_t min_bytes = std::max<uintptr_t>(
      kHugePageBytes,
      static_cast<uintptr_t>(std::max<int64_t>(options.min_bytes, 0)));
  // Lives as long as the process: LibTorch keeps the pointer.
  auto* allocator = new HugePageAllocator(
      fallback, min_bytes,
      static_cast<uintptr_t>(std::max<int64_t>(options.max_cached_bytes, 0)));
  HugePageAllocator::SetInstance(allocator);
  c10::SetCPUAllocator(allocator, /*priority=*/1);
  return HugePageAllocatorState::kInstalled;
}

int64_t ReleaseCachedHugePages() {
  const HugePageAllocator* allocator = HugePageAllocator::Instance();
  return allocator == nullptr
             ? 0
             : static_cast<int64_t>(allocator->ReleaseCached());
}

}  // namespace favor::attention
