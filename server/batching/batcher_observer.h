// Hooks through which the batcher reports what metrics need (queue duration,
// batch sizes, compute duration), without depending on a metrics library.
// server/metrics implements this interface with prometheus-cpp families.
#ifndef FAVOR_SERVER_BATCHING_BATCHER_OBSERVER_H_
#define FAVOR_SERVER_BATCHING_BATCHER_OBSERVER_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/batching/request.h"

namespace favor::batching {

// Called from the batcher's threads (batch former and workers) and from
// Enqueue's callers, possibly concurrently, with no batcher lock held except
// where said: implementations must be thread-safe and quick. Every request
// that enters the queue is reported once by OnEnqueued and once by
// OnDequeued, so the difference is the number waiting (queued, or in a
// formed batch that no worker has started).
class BatcherObserver {
 public:
  // An observer that does nothing, what a Batcher created without one uses.
  // Process-wide; never destroyed.
  static BatcherObserver* Noop();

  virtual ~BatcherObserver() = default;

  // A request entered the queue. Called with the batcher's lock held, before
  // the request can leave it, so that its OnDequeued always comes after:
  // implementations must only record, never call back into the batcher.
  virtual void OnEnqueued(const Request& request) = 0;

  // A request left the queue: to be run (`code` OK; `queue_duration` runs
  // from admission to the start of its batch), or answered without being
  // run (`code` DEADLINE_EXCEEDED, CANCELLED or UNAVAILABLE). Requests that
  // Enqueue() rejects never entered the queue and are not reported here.
  virtual void OnDequeued(const Request& request, absl::Duration queue_duration,
                          absl::StatusCode code) = 0;

  // A worker ran a batch of `num_requests` requests and `num_tokens` tokens;
  // `status` is what the runner returned. Reported before the batch's
  // requests are answered.
  virtual void OnBatchRun(int worker_index, int64_t num_requests,
                          int64_t num_tokens, absl::Duration compute_duration,
                          const absl::Status& status) = 0;
};

}  // namespace favor::batching

#endif  // FAVOR_SERVER_BATCHING_BATCHER_OBSERVER_H_
