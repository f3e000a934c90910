#include "server/batching/request_queues.h"

#include <cstdint>
#include <iterator>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/batching/request.h"

namespace favor::batching {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1000);

std::unique_ptr<Request> MakeRequest(uint64_t id, int64_t num_tokens,
                                     Priority priority, absl::Time enqueued,
                                     absl::Time deadline) {
  auto request = std::make_unique<Request>(nullptr);
  request->id = id;
  request->num_tokens = num_tokens;
  request->priority = priority;
  request->enqueue_time = enqueued;
  request->deadline = deadline;
  return request;
}

std::vector<uint64_t> Ids(const RequestQueues::Queue& queue) {
  std::vector<uint64_t> ids;
  for (const std::unique_ptr<Request>& request : queue)
    ids.push_back(request->id);
  return ids;
}

// Takes every request out, high first, and answers it.
void CompleteAll(RequestQueues* queues) {
  for (const Priority priority : {Priority::kHigh, Priority::kNormal}) {
    for (auto it = queues->queue(priority).cbegin();
         it != queues->queue(priority).cend();) {
      queues->Take(priority, &it)->Complete(absl::OkStatus());
    }
  }
}

TEST(RequestQueuesTest, EmptyQueuesHaveNoOldestAndNoDeadline) {
  const RequestQueues queues;
  EXPECT_TRUE(queues.empty());
  EXPECT_EQ(queues.num_requests(), 0);
  EXPECT_EQ(queues.num_tokens(), 0);
  EXPECT_EQ(queues.Oldest(), nullptr);
  EXPECT_EQ(queues.EarliestDeadline(), absl::InfiniteFuture());
}

TEST(RequestQueuesTest, PushSortsByPriorityAndCountsTokens) {
  RequestQueues queues;
  const absl::Time never = absl::InfiniteFuture();
  queues.Push(MakeRequest(1, 10, Priority::kNormal, kStart, never));
  queues.Push(MakeRequest(2, 20, Priority::kHigh, kStart, never));
  queues.Push(MakeRequest(3, 30, Priority::kNormal, kStart, never));
  EXPECT_EQ(Ids(queues.queue(Priority::kHigh)), std::vector<uint64_t>{2});
  EXPECT_EQ(Ids(queues.queue(Priority::kNormal)),
            (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(queues.num_requests(), 3);
  EXPECT_EQ(queues.num_tokens(), 60);
  CompleteAll(&queues);
  EXPECT_TRUE(queues.empty());
  EXPECT_EQ(queues.num_tokens(), 0);
}

TEST(RequestQueuesTest, TakeRemovesOneRequestAndMovesToTheNext) {
  RequestQueues queues;
  const absl::Time never = absl::InfiniteFuture();
  for (uint64_t id = 1; id <= 3; ++id) {
    queues.Push(MakeRequest(id, 10 * static_cast<int64_t>(id),
                            Priority::kNormal, kStart, never));
  }
  auto it = std::next(queues.queue(Priority::kNormal).cbegin());
  std::unique_ptr<Request> taken = queues.Take(Priority::kNormal, &it);
  EXPECT_EQ(taken->id, 2u);
  EXPECT_EQ((*it)->id, 3u);
  EXPECT_EQ(Ids(queues.queue(Priority::kNormal)),
            (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(queues.num_tokens(), 40);
  taken->Complete(absl::OkStatus());
  CompleteAll(&queues);
}

TEST(RequestQueuesTest, OldestAndEarliestDeadlineLookAtBothPriorities) {
  RequestQueues queues;
  queues.Push(MakeRequest(1, 1, Priority::kHigh, kStart + absl::Seconds(2),
                          kStart + absl::Seconds(9)));
  queues.Push(MakeRequest(2, 1, Priority::kNormal, kStart + absl::Seconds(1),
                          kStart + absl::Seconds(5)));
  queues.Push(MakeRequest(3, 1, Priority::kNormal, kStart + absl::Seconds(3),
                          kStart + absl::Seconds(4)));
  EXPECT_EQ(queues.Oldest()->id, 2u);
  EXPECT_EQ(queues.EarliestDeadline(), kStart + absl::Seconds(4));
  CompleteAll(&queues);
}

}  // namespace
}  // namespace favor::batching
