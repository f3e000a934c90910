// The batch-packing policy of the Batcher, as plain functions over its
// queues: when the next batch is due, which request leads it and which
// requests fill it. batcher.h ("How a batch is formed") states the policy;
// these functions are its only implementation, kept apart from the
// batcher's threads and locks so that they can be tested on their own.
//
// Worst cases: BatchDueTime is O(1); PackBatch walks each queue once,
// O(queued requests).
#ifndef FAVOR_SERVER_BATCHING_BATCH_PACKING_H_
#define FAVOR_SERVER_BATCHING_BATCH_PACKING_H_

#include <cstdint>
#include <limits>

#include "absl/time/time.h"
#include "server/batching/batch.h"
#include "server/batching/request.h"
#include "server/batching/request_queues.h"

namespace favor::batching {

// The Batcher::Options that decide what a batch holds and when it is due;
// each field means what the option of the same name means there (the
// Batcher copies them, and validates them first).
struct PackingPolicy {
  // What a batch may hold.
  int64_t max_batch_tokens = 1;
  int64_t max_batch_requests = 1;
  // How long the oldest request waits for company.
  absl::Duration max_queue_delay = absl::ZeroDuration();
  // The age bound and the priority share, against starvation.
  absl::Duration max_request_age = absl::InfiniteDuration();
  int max_consecutive_high_batches = 1;
};

// PackBatch's max_memory_bytes when no memory budget applies.
inline constexpr int64_t kNoMemoryLimit = std::numeric_limits<int64_t>::max();

// When the next batch of `queues` falls due: at once (InfinitePast) when
// they hold a full batch (max_batch_tokens tokens or max_batch_requests
// requests), else once their oldest request has waited max_queue_delay;
// never (InfiniteFuture) when they are empty. Request deadlines play no part
// here: an expired request is dropped by its owner, not packed.
absl::Time BatchDueTime(const RequestQueues& queues,
                        const PackingPolicy& policy);

// The priority whose oldest request leads the next batch (`queues` not
// empty): the oldest request's when it is past the age bound; else high,
// unless `high_led_in_a_row` batches in a row were led by high priority while
// normal requests waited and that reached max_consecutive_high_batches; else
// normal.
Priority ChooseLeader(const RequestQueues& queues, const PackingPolicy& policy,
                      absl::Time now, int high_led_in_a_row);

// Takes the next batch out of `queues` (not empty): the leader of
// ChooseLeader, then first fit in this order: requests past the age bound
// (oldest first), high-priority, then normal requests, in arrival order. A
// request that does not fit is skipped and keeps its place. The batch holds
// at most max_batch_tokens tokens and max_batch_requests requests, except a
// leader larger than max_batch_tokens, which runs alone, and at most
// `max_memory_bytes` of its requests' memory_bytes. When the leader alone
// exceeds max_memory_bytes, nothing is taken: the batch is empty and
// `queues` and `*high_led_in_a_row` are unchanged (the leader waits, and
// nothing overtakes it). Otherwise updates `*high_led_in_a_row` (the
// priority share's count).
Batch PackBatch(const PackingPolicy& policy, absl::Time now,
                RequestQueues* queues, int* high_led_in_a_row,
                int64_t max_memory_bytes = kNoMemoryLimit);

}  // namespace favor::batching

#endif  // FAVOR_SERVER_BATCHING_BATCH_PACKING_H_
