// The process's memory budget (favor-server's --max_memory_bytes), shared by
// every model's Batcher, so that the batches running at once never need
// more memory than the machine or the container gives the server.
//
// The budget is max_bytes. What the process holds whatever it runs (the
// models' weights, the libraries, the allocator's cache of freed blocks) is
// counted once, as resident_bytes; what is left, batch_capacity_bytes(), is
// shared by the batches in flight. A Batcher reserves a batch's estimated
// peak (batcher.h, "Memory") when it forms the batch and releases it when
// the batch is done, whatever its outcome; a batch that does not fit waits
// for releases. Listeners (the batchers) are told of every release, so that
// one waiting for room looks again.
//
// Thread-safe. Lock order: a Batcher calls Reserve() under its own mutex;
// Release() takes no batcher's lock itself and calls the listeners after
// letting go of the budget's lock, so the two never wait on each other.
#ifndef FAVOR_SERVER_BATCHING_MEMORY_BUDGET_H_
#define FAVOR_SERVER_BATCHING_MEMORY_BUDGET_H_

#include <cstdint>
#include <map>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace favor::batching {

class MemoryBudget {
 public:
  struct Options {
    // The whole budget, in bytes (> 0).
    int64_t max_bytes = 0;
    // Counted once, whatever runs: below max_bytes.
    int64_t resident_bytes = 0;
    // Told the bytes reserved after every change, under the budget's lock
    // (e.g. a metrics gauge: cheap, and takes no other lock of the
    // batching module). May be empty.
    absl::AnyInvocable<void(int64_t reserved_bytes)> on_change;
    // Told the resident bytes after AddWeights and RemoveWeights (a
    // reload), the same way. May be empty.
    absl::AnyInvocable<void(int64_t resident_bytes)> on_resident_change;
  };

  // INVALID_ARGUMENT when max_bytes <= 0, resident_bytes < 0 or
  // resident_bytes >= max_bytes (nothing would be left for batches); the
  // message names both numbers.
  static absl::StatusOr<std::unique_ptr<MemoryBudget>> Create(Options options);

  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  int64_t max_bytes() const { return max_bytes_; }
  // Counted once: Options.resident_bytes plus the weights added since
  // (AddWeights), less those removed.
  int64_t resident_bytes() const;
  // What the batches in flight may hold together.
  int64_t batch_capacity_bytes() const { return max_bytes_ - resident_bytes(); }
  // Held by the batches in flight now.
  int64_t reserved_bytes() const;

  // Reserves what `choose` returns, given the bytes available now (capacity
  // minus reserved); `choose` runs under the budget's lock, so that what it
  // picks still fits when reserved, and returns 0 (nothing reserved) or at
  // most what it was given. Returns the bytes reserved.
  int64_t Reserve(absl::FunctionRef<int64_t(int64_t available_bytes)> choose);
  // Gives back `bytes` from an earlier Reserve, then tells every listener.
  void Release(int64_t bytes);

  // A model reload (docs/server.md, Reloading models): a new revision's
  // weights are counted as resident from before it serves until it is
  // freed, beside the revision it replaces until that one is freed.
  // AddWeights is RESOURCE_EXHAUSTED, naming the numbers, when `bytes` do
  // not fit in what is free now (neither resident nor reserved by a
  // batch); nothing is counted then. Otherwise batches have less room from
  // now on, and every listener is told (a request waiting for room may no
  // longer fit at all). RemoveWeights gives back weights that never served
  // and tells every listener.
  absl::Status AddWeights(int64_t bytes);
  void RemoveWeights(int64_t bytes);
  // A revision is being retired (replaced by a revision loading now, or
  // removed): its `bytes`, still resident, are freed once its last calls
  // finish, and count as retiring_bytes() until then. UnretireWeights
  // takes that back when the revision keeps serving after all (its
  // replacement failed to load); FreeRetiredWeights gives them back to
  // batches and tells every listener.
  void RetireWeights(int64_t bytes);
  void UnretireWeights(int64_t bytes);
  void FreeRetiredWeights(int64_t bytes);
  // Resident weights of retired revisions, not yet freed: room that batches
  // get back without any reload (a request that needs it is told to retry,
  // not that it can never run).
  int64_t retiring_bytes() const;

  // Runs `listener` after every Release() until RemoveListener(id); the id
  // is returned. RemoveListener waits for a listener that is running.
  int AddListener(absl::AnyInvocable<void()> listener);
  void RemoveListener(int id);

 private:
  explicit MemoryBudget(Options options);

  void NotifyListeners();

  const int64_t max_bytes_;
  mutable absl::Mutex mu_;
  int64_t resident_bytes_ ABSL_GUARDED_BY(mu_);
  int64_t reserved_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t retiring_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // Counted in resident.
  absl::AnyInvocable<void(int64_t)> on_change_ ABSL_GUARDED_BY(mu_);
  absl::AnyInvocable<void(int64_t)> on_resident_change_ ABSL_GUARDED_BY(mu_);
  // Held while listeners run, so that one is never removed (and its batcher
  // destroyed) in the middle of its call.
  absl::Mutex listeners_mu_;
  std::map<int, absl::AnyInvocable<void()>> listeners_
      ABSL_GUARDED_BY(listeners_mu_);
  int next_listener_id_ ABSL_GUARDED_BY(listeners_mu_) = 0;
};

}  // namespace favor::batching

#endif  // FAVOR_SERVER_BATCHING_MEMORY_BUDGET_H_
