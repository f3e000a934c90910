// The requests waiting to be batched: one queue per priority, each in
// arrival order, and their token total. The Batcher keeps one under its
// mutex; the packing policy (batch_packing.h) forms batches out of it.
//
// Not thread-safe: its owner serialises access.
#ifndef FAVOR_SERVER_BATCHING_REQUEST_QUEUES_H_
#define FAVOR_SERVER_BATCHING_REQUEST_QUEUES_H_

#include <array>
#include <cstdint>
#include <list>
#include <memory>

#include "absl/time/time.h"
#include "server/batching/request.h"

namespace favor::batching {

class RequestQueues {
 public:
  using Queue = std::list<std::unique_ptr<Request>>;

  // Appends `request` (not null) to the queue of its priority.
  void Push(std::unique_ptr<Request> request);

  // Removes the request `*it` points to from the queue of `priority`, moves
  // `*it` to the next one and returns the request.
  std::unique_ptr<Request> Take(Priority priority, Queue::const_iterator* it);

  // The requests of one priority, oldest first.
  const Queue& queue(Priority priority) const {
    return queues_[Index(priority)];
  }

  bool empty() const { return num_requests() == 0; }
  int64_t num_requests() const;
  int64_t num_tokens() const { return num_tokens_; }

  // The earliest admitted request (by enqueue_time) of either priority;
  // null when both queues are empty.
  const Request* Oldest() const;
  // The earliest deadline of the queued requests; InfiniteFuture when none.
  absl::Time EarliestDeadline() const;

  // Implementation details follow.
 private:
  static int Index(Priority priority) {
    return priority == Priority::kHigh ? 0 : 1;
  }

  std::array<Queue, 2> queues_;
  int64_t num_tokens_ = 0;  // Sum over both queues.
};

}  // namespace favor::batching

#endif  // FAVOR_SERVER_BATCHING_REQUEST_QUEUES_H_
