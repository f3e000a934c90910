#include "server/batching/request_queues.h"

#include <algorithm>
#include <utility>

#include "glog/logging.h"

namespace favor::batching {

void RequestQueues::Push(std::unique_ptr<Request> request) {
  CHECK(request != nullptr) << "RequestQueues::Push: null request";
  num_tokens_ += request->num_tokens;
  queues_[Index(request->priority)].push_back(std::move(request));
}

std::unique_ptr<Request> RequestQueues::Take(Priority priority,
                                             Queue::const_iterator* it) {
  Queue& queue = queues_[Index(priority)];
  // Erasing the empty range [*it, *it) turns the const_iterator into a
  // writable one at the same place, without a walk.
  const Queue::iterator at = queue.erase(*it, *it);
  std::unique_ptr<Request> request = std::move(*at);
  num_tokens_ -= request->num_tokens;
  *it = queue.erase(at);
  return request;
}

int64_t RequestQueues::num_requests() const {
  return static_cast<int64_t>(queues_[0].size() + queues_[1].size());
}

const Request* RequestQueues::Oldest() const {
  const Queue& high = queues_[0];
  const Queue& normal = queues_[1];
  if (high.empty()) return normal.empty() ? nullptr : normal.front().get();
  if (normal.empty()) return high.front().get();
  return high.front()->enqueue_time <= normal.front()->enqueue_time
             ? high.front().get()
             : normal.front().get();
}

absl::Time RequestQueues::EarliestDeadline() const {
  absl::Time earliest = absl::InfiniteFuture();
  for (const Queue& queue : queues_) {
    for (const std::unique_ptr<Request>& request : queue) {
      earliest = std::min(earliest, request->deadline);
    }
  }
  return earliest;
}

}  // namespace favor::batching
