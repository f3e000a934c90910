// One unit of queued work: what the batcher needs to schedule it (cost,
// priority, deadline, cancellation). What the runner computes is a Job's
// (job.h), a Request of its own type; the batcher never looks inside.
//
// Completion contract: every Request is completed exactly once, through
// Complete(), which runs its `done` callback. Whoever owns the Request (a
// std::unique_ptr is passed along) completes it: the batcher for requests it
// rejects or drops (RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, CANCELLED,
// UNAVAILABLE, ...), the runner or the batcher after the runner for computed
// ones. A Request destroyed without having been completed completes itself
// with INTERNAL, so that a caller is never left without an answer.
#ifndef FAVOR_SERVER_BATCHING_REQUEST_H_
#define FAVOR_SERVER_BATCHING_REQUEST_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"

namespace favor::batching {

// Two levels: high-priority requests lead batches first, but the batcher
// never lets them starve normal ones (see Batcher::Options).
enum class Priority {
  kHigh,
  kNormal,
};

std::string_view PriorityName(Priority priority);  // "high", "normal"

// Set by the transport when the caller goes away (cancelled call, closed
// stream); read by the batcher. Thread-safe. One flag may be shared by all
// the requests of a stream.
class CancellationFlag {
 public:
  void Cancel() { cancelled_.store(true, std::memory_order_release); }
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

 private:
  std::atomic<bool> cancelled_{false};
};

class Request {
 public:
  // Receives the request's final status: OK once the runner has written the
  // result (into its Job's work), or why there is no result. Runs on whichever
  // thread completes the request (the caller of Batcher::Enqueue, the batch
  // former or a batch worker) and with no batcher lock held: it must be
  // quick (e.g. finish a gRPC reactor) and may call back into the batcher.
  using DoneCallback = absl::AnyInvocable<void(absl::Status) &&>;

  explicit Request(DoneCallback done);
  virtual ~Request();  // Completes with INTERNAL if never completed.
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  // Runs the done callback with `status`. A second call is a bug: it is
  // logged and ignored (the first answer stands).
  void Complete(absl::Status status);
  bool completed() const { return completed_; }

  bool IsCancelled() const {
    return cancellation != nullptr && cancellation->cancelled();
  }

  // Set by the caller before Batcher::Enqueue.
  uint64_t id = 0;         // For logs and tests only; need not be unique.
  int64_t num_tokens = 0;  // The cost the token budgets count (>= 1).
  // The estimated peak bytes the request adds to its batch, which the
  // memory budget counts (batcher.h, "Memory"); 0: nothing.
  int64_t memory_bytes = 0;
  Priority priority = Priority::kNormal;
  absl::Time deadline = absl::InfiniteFuture();  // Answer by then or never.
  std::shared_ptr<const CancellationFlag> cancellation;  // Null: never.

  // Set by Batcher::Enqueue when the request is admitted to the queue.
  absl::Time enqueue_time = absl::InfinitePast();

 private:
  DoneCallback done_;
  bool completed_ = false;
};

}  // namespace favor::batching

#endif  // FAVOR_SERVER_BATCHING_REQUEST_H_
