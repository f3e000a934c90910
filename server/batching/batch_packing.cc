#include "server/batching/batch_packing.h"

#include <memory>
#include <utility>

namespace favor::batching {
namespace {

using Queue = RequestQueues::Queue;

bool Overdue(const Request& request, const PackingPolicy& policy,
             absl::Time now) {
  return now - request.enqueue_time >= policy.max_request_age;
}

// What a batch may hold besides the policy's limits: the memory left.
struct Room {
  int64_t memory_bytes;
};

bool Fits(const Batch& batch, const Request& request,
          const PackingPolicy& policy, const Room& room) {
  return batch.num_tokens + request.num_tokens <= policy.max_batch_tokens &&
         static_cast<int64_t>(batch.requests.size()) <
             policy.max_batch_requests &&
         request.memory_bytes <= room.memory_bytes - batch.memory_bytes;
}

bool Full(const Batch& batch, const PackingPolicy& policy) {
  return batch.num_tokens >= policy.max_batch_tokens ||
         static_cast<int64_t>(batch.requests.size()) >=
             policy.max_batch_requests;
}

void AddTo(std::unique_ptr<Request> request, Batch* batch) {
  batch->num_tokens += request->num_tokens;
  batch->memory_bytes += request->memory_bytes;
  batch->requests.push_back(std::move(request));
}

// Overdue requests form a prefix of each queue (arrival order); walks both
// prefixes oldest first, taking those that fit.
void TakeOverdue(const PackingPolicy& policy, const Room& room, absl::Time now,
                 RequestQueues* queues, Batch* batch) {
  const Queue& high = queues->queue(Priority::kHigh);
  const Queue& normal = queues->queue(Priority::kNormal);
  Queue::const_iterator high_it = high.begin();
  Queue::const_iterator normal_it = normal.begin();
  while (!Full(*batch, policy)) {
    const bool high_overdue =
        high_it != high.end() && Overdue(**high_it, policy, now);
    const bool normal_overdue =
        normal_it != normal.end() && Overdue(**normal_it, policy, now);
    if (!high_overdue && !normal_overdue) return;
    const bool take_high =
        high_overdue && (!normal_overdue || (*high_it)->enqueue_time <=
                                                (*normal_it)->enqueue_time);
    Queue::const_iterator& it = take_high ? high_it : normal_it;
    if (Fits(*batch, **it, policy, room)) {
      AddTo(queues->Take(take_high ? Priority::kHigh : Priority::kNormal, &it),
            batch);
    } else {
      ++it;
    }
  }
}

// First fit in arrival order: a request that does not fit is skipped.
void TakeFitting(const PackingPolicy& policy, const Room& room,
                 Priority priority, RequestQueues* queues, Batch* batch) {
  const Queue& queue = queues->queue(priority);
  for (auto it = queue.begin(); it != queue.end() && !Full(*batch, policy);) {
    if (Fits(*batch, **it, policy, room)) {
      AddTo(queues->Take(priority, &it), batch);
    } else {
      ++it;
    }
  }
}

}  // namespace

absl::Time BatchDueTime(const RequestQueues& queues,
                        const PackingPolicy& policy) {
  if (queues.empty()) return absl::InfiniteFuture();
  const bool full = queues.num_tokens() >= policy.max_batch_tokens ||
                    queues.num_requests() >= policy.max_batch_requests;
  if (full) return absl::InfinitePast();
  return queues.Oldest()->enqueue_time + policy.max_queue_delay;
}

Priority ChooseLeader(const RequestQueues& queues, const PackingPolicy& policy,
                      absl::Time now, int high_led_in_a_row) {
  if (queues.queue(Priority::kHigh).empty()) return Priority::kNormal;
  if (queues.queue(Priority::kNormal).empty()) return Priority::kHigh;
  const Request& oldest = *queues.Oldest();
  if (Overdue(oldest, policy, now)) return oldest.priority;
  return high_led_in_a_row < policy.max_consecutive_high_batches
             ? Priority::kHigh
             : Priority::kNormal;
}

Batch PackBatch(const PackingPolicy& policy, absl::Time now,
                RequestQueues* queues, int* high_led_in_a_row,
                int64_t max_memory_bytes) {
  const Priority leader =
      ChooseLeader(*queues, policy, now, *high_led_in_a_row);
  Queue::const_iterator first = queues->queue(leader).begin();
  if ((*first)->memory_bytes > max_memory_bytes) return Batch();
  const bool normal_waits = !queues->queue(Priority::kNormal).empty();
  *high_led_in_a_row =
      leader == Priority::kHigh && normal_waits ? *high_led_in_a_row + 1 : 0;
  const Room room{max_memory_bytes};
  Batch batch;
  AddTo(queues->Take(leader, &first), &batch);
  TakeOverdue(policy, room, now, queues, &batch);
  TakeFitting(policy, room, Priority::kHigh, queues, &batch);
  TakeFitting(policy, room, Priority::kNormal, queues, &batch);
  return batch;
}

}  // namespace favor::batching
