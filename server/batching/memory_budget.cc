#include "server/batching/memory_budget.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace favor::batching {

absl::StatusOr<std::unique_ptr<MemoryBudget>> MemoryBudget::Create(
    Options options) {
  if (options.max_bytes <= 0 || options.resident_bytes < 0 ||
      options.resident_bytes >= options.max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory budget of ", options.max_bytes,
                     " bytes leaves nothing for "
                     "batches beside the ",
                     options.resident_bytes,
                     " bytes resident (weights, libraries, allocator cache)"));
  }
  return std::unique_ptr<MemoryBudget>(new MemoryBudget(std::move(options)));
}

MemoryBudget::MemoryBudget(Options options)
    : max_bytes_(options.max_bytes),
      resident_bytes_(options.resident_bytes),
      on_change_(std::move(options.on_change)),
      on_resident_change_(std::move(options.on_resident_change)) {}

int64_t MemoryBudget::resident_bytes() const {
  absl::MutexLock lock(&mu_);
  return resident_bytes_;
}

absl::Status MemoryBudget::AddWeights(int64_t bytes) {
  {
    absl::MutexLock lock(&mu_);
    const int64_t free_bytes = max_bytes_ - resident_bytes_ - reserved_bytes_;
    if (bytes > free_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "weights of ", bytes, " bytes do not fit in the memory budget of ",
          max_bytes_, " bytes (--max_memory_bytes): ", resident_bytes_,
          " resident, ", reserved_bytes_, " reserved by batches, ",
          free_bytes, " free"));
    }
    resident_bytes_ += bytes;
    if (on_resident_change_) on_resident_change_(resident_bytes_);
  }
  NotifyListeners();
  return absl::OkStatus();
}

void MemoryBudget::RemoveWeights(int64_t bytes) {
  {
    absl::MutexLock lock(&mu_);
    resident_bytes_ -= bytes;
    if (on_resident_change_) on_resident_change_(resident_bytes_);
  }
  NotifyListeners();
}

// Weights are not checked against the resident bytes: a start-up model's
// are part of a measured figure (VmRSS), and a CUDA model's are not in it
// at all. Only retiring_bytes_ is kept from going below zero.
void MemoryBudget::RetireWeights(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  retiring_bytes_ += bytes;
}

void MemoryBudget::UnretireWeights(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  retiring_bytes_ -= std::min(bytes, retiring_bytes_);
}

void MemoryBudget::FreeRetiredWeights(int64_t bytes) {
  {
    absl::MutexLock lock(&mu_);
    retiring_bytes_ -= std::min(bytes, retiring_bytes_);
    resident_bytes_ -= bytes;
    if (on_resident_change_) on_resident_change_(resident_bytes_);
  }
  NotifyListeners();
}

int64_t MemoryBudget::retiring_bytes() const {
  absl::MutexLock lock(&mu_);
  return retiring_bytes_;
}

int64_t MemoryBudget::reserved_bytes() const {
  absl::MutexLock lock(&mu_);
  return reserved_bytes_;
}

int64_t MemoryBudget::Reserve(
    absl::FunctionRef<int64_t(int64_t available_bytes)> choose) {
  absl::MutexLock lock(&mu_);
  const int64_t available = max_bytes_ - resident_bytes_ - reserved_bytes_;
  const int64_t bytes = choose(available);
  CHECK(bytes >= 0 && bytes <= std::max<int64_t>(available, 0))
      << "MemoryBudget::Reserve: chose " << bytes << " of " << available;
  if (bytes == 0) return 0;
  reserved_bytes_ += bytes;
  if (on_change_) on_change_(reserved_bytes_);
  return bytes;
}

void MemoryBudget::Release(int64_t bytes) {
  if (bytes <= 0) return;
  {
    absl::MutexLock lock(&mu_);
    CHECK_LE(bytes, reserved_bytes_) << "MemoryBudget::Release of more than "
                                        "was reserved";
    reserved_bytes_ -= bytes;
    if (on_change_) on_change_(reserved_bytes_);
  }
  NotifyListeners();
}

void MemoryBudget::NotifyListeners() {
  absl::MutexLock lock(&listeners_mu_);
  for (auto& [id, listener] : listeners_) listener();
}

int MemoryBudget::AddListener(absl::AnyInvocable<void()> listener) {
  absl::MutexLock lock(&listeners_mu_);
  const int id = next_listener_id_++;
  listeners_[id] = std::move(listener);
  return id;
}

void MemoryBudget::RemoveListener(int id) {
  absl::MutexLock lock(&listeners_mu_);
  listeners_.erase(id);
}

}  // namespace favor::batching
