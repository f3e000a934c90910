// The packing policy on its own: queues filled by hand, no batcher, no
// threads. Requests are added in arrival order, as the Batcher admits them;
// an `age` sets a request's enqueue_time that long before `now_`.
#include "server/batching/batch_packing.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/batching/request.h"
#include "server/batching/request_queues.h"

namespace favor::batching {
namespace {

using ::testing::ElementsAre;

constexpr absl::Duration kDelay = absl::Milliseconds(10);
constexpr absl::Duration kAgeBound = absl::Milliseconds(500);

class BatchPackingTest : public ::testing::Test {
 protected:
  BatchPackingTest() {
    policy_.max_batch_tokens = 100;
    policy_.max_batch_requests = 8;
    policy_.max_queue_delay = kDelay;
    policy_.max_request_age = kAgeBound;
    policy_.max_consecutive_high_batches = 2;
  }

  ~BatchPackingTest() override {
    while (!queues_.empty()) Pack();  // Completes what a test left queued.
  }

  void Add(uint64_t id, int64_t num_tokens,
           Priority priority = Priority::kNormal,
           absl::Duration age = absl::ZeroDuration(),
           absl::Time deadline = absl::InfiniteFuture(),
           int64_t memory_bytes = 0) {
    auto request = std::make_unique<Request>(nullptr);
    request->id = id;
    request->num_tokens = num_tokens;
    request->memory_bytes = memory_bytes;
    request->priority = priority;
    request->deadline = deadline;
    request->enqueue_time = now_ - age;
    queues_.Push(std::move(request));
  }

  // Packs the next batch (within `max_memory_bytes` of the requests'
  // memory_bytes) and returns its ids in batch order.
  std::vector<uint64_t> Pack(int64_t max_memory_bytes = kNoMemoryLimit) {
    Batch batch = PackBatch(policy_, now_, &queues_, &high_led_in_a_row_,
                            max_memory_bytes);
    std::vector<uint64_t> ids;
    int64_t num_tokens = 0, memory_bytes = 0;
    for (const std::unique_ptr<Request>& request : batch.requests) {
      ids.push_back(request->id);
      num_tokens += request->num_tokens;
      memory_bytes += request->memory_bytes;
      request->Complete(absl::OkStatus());
    }
    EXPECT_EQ(batch.num_tokens, num_tokens);
    EXPECT_EQ(batch.memory_bytes, memory_bytes);
    EXPECT_LE(batch.memory_bytes, max_memory_bytes);
    return ids;
  }

  // Add() with memory bytes, normal priority, no age, no deadline.
  void AddBytes(uint64_t id, int64_t num_tokens, int64_t memory_bytes) {
    Add(id, num_tokens, Priority::kNormal, absl::ZeroDuration(),
        absl::InfiniteFuture(), memory_bytes);
  }

  PackingPolicy policy_;
  RequestQueues queues_;
  const absl::Time now_ = absl::FromUnixSeconds(1000);
  int high_led_in_a_row_ = 0;
};

// ---------------------------------------------------------------------------
// When a batch is due.

TEST_F(BatchPackingTest, NothingIsDueWhileTheQueuesAreEmpty) {
  EXPECT_EQ(BatchDueTime(queues_, policy_), absl::InfiniteFuture());
}

TEST_F(BatchPackingTest, DueWhenTheOldestRequestHasWaitedTheDelay) {
  Add(1, 10, Priority::kNormal, absl::Milliseconds(5));
  Add(2, 10, Priority::kHigh, absl::Milliseconds(3));
  // The oldest of either priority counts, not the high-priority one.
  EXPECT_EQ(BatchDueTime(queues_, policy_),
            now_ - absl::Milliseconds(5) + kDelay);
}

TEST_F(BatchPackingTest, DueAtOnceWhenTheQueuesHoldAFullBatchOfTokens) {
  Add(1, 60);
  EXPECT_EQ(BatchDueTime(queues_, policy_), now_ + kDelay);
  Add(2, 40);
  EXPECT_EQ(BatchDueTime(queues_, policy_), absl::InfinitePast());
}

TEST_F(BatchPackingTest, DueAtOnceWhenTheQueuesHoldAFullBatchOfRequests) {
  for (uint64_t id = 1; id < 8; ++id) Add(id, 1);
  EXPECT_EQ(BatchDueTime(queues_, policy_), now_ + kDelay);
  Add(8, 1);
  EXPECT_EQ(BatchDueTime(queues_, policy_), absl::InfinitePast());
}

TEST_F(BatchPackingTest, DeadlinesDoNotMoveTheDueTime) {
  // A request about to expire is dropped by the batcher, never hurried into
  // a batch: its deadline wakes the batcher, it does not make a batch due.
  Add(1, 10, Priority::kNormal, absl::ZeroDuration(),
      now_ + absl::Milliseconds(1));
  EXPECT_EQ(BatchDueTime(queues_, policy_), now_ + kDelay);
  EXPECT_EQ(queues_.EarliestDeadline(), now_ + absl::Milliseconds(1));
}

// ---------------------------------------------------------------------------
// Budgets and length-aware packing.

TEST_F(BatchPackingTest, NeverExceedsTheTokenBudget) {
  Add(1, 40);
  Add(2, 40);
  Add(3, 40);
  EXPECT_THAT(Pack(), ElementsAre(1, 2));
  EXPECT_THAT(Pack(), ElementsAre(3));
  EXPECT_TRUE(queues_.empty());
}

TEST_F(BatchPackingTest, NeverExceedsTheRequestLimit) {
  for (uint64_t id = 1; id <= 10; ++id) Add(id, 1);
  EXPECT_THAT(Pack(), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
  EXPECT_THAT(Pack(), ElementsAre(9, 10));
}

TEST_F(BatchPackingTest, PacksShorterRequestsAroundALongOne) {
  Add(1, 60);
  Add(2, 50);  // Does not fit after 1: skipped, not waited for.
  Add(3, 30);
  Add(4, 10);
  EXPECT_THAT(Pack(), ElementsAre(1, 3, 4));
  EXPECT_EQ(queues_.num_tokens(), 50);
}

TEST_F(BatchPackingTest, TheSkippedRequestLeadsTheNextBatch) {
  Add(1, 30);
  Add(2, 80);
  Add(3, 20);
  Add(4, 20);
  Add(5, 20);
  Add(6, 20);
  EXPECT_THAT(Pack(), ElementsAre(1, 3, 4, 5));
  // Later, shorter arrivals never overtake the oldest request for good.
  Add(7, 10);
  EXPECT_THAT(Pack(), ElementsAre(2, 6));
  EXPECT_THAT(Pack(), ElementsAre(7));
}

TEST_F(BatchPackingTest, OversizeLeaderRunsAlone) {
  Add(1, 150);
  Add(2, 10);
  EXPECT_THAT(Pack(), ElementsAre(1));
  EXPECT_THAT(Pack(), ElementsAre(2));
}

// ---------------------------------------------------------------------------
// Priority, the priority share and the age bound.

TEST_F(BatchPackingTest, HighPriorityLeadsAndFillsFirst) {
  Add(1, 50);
  Add(2, 50, Priority::kHigh);
  Add(3, 50);
  Add(4, 30, Priority::kHigh);
  EXPECT_THAT(Pack(), ElementsAre(2, 4));
  EXPECT_THAT(Pack(), ElementsAre(1, 3));
}

TEST_F(BatchPackingTest, ThePriorityShareLetsTheOldestNormalRequestLead) {
  Add(1, 100);
  Add(2, 100, Priority::kHigh);
  Add(3, 100, Priority::kHigh);
  Add(4, 100, Priority::kHigh);
  EXPECT_THAT(Pack(), ElementsAre(2));
  EXPECT_THAT(Pack(), ElementsAre(3));
  EXPECT_EQ(high_led_in_a_row_, 2);
  EXPECT_THAT(Pack(), ElementsAre(1));  // Two high-led batches in a row.
  EXPECT_EQ(high_led_in_a_row_, 0);
  EXPECT_THAT(Pack(), ElementsAre(4));
}

TEST_F(BatchPackingTest, HighLedBatchesCountOnlyWhileNormalRequestsWait) {
  for (uint64_t id = 1; id <= 3; ++id) Add(id, 100, Priority::kHigh);
  EXPECT_THAT(Pack(), ElementsAre(1));
  EXPECT_THAT(Pack(), ElementsAre(2));
  EXPECT_EQ(high_led_in_a_row_, 0);
  Add(4, 100);
  EXPECT_THAT(Pack(), ElementsAre(3));  // The share is not used up.
  EXPECT_THAT(Pack(), ElementsAre(4));
}

TEST_F(BatchPackingTest, ARequestPastTheAgeBoundLeadsAheadOfPriority) {
  Add(1, 100, Priority::kNormal, kAgeBound);
  Add(2, 100, Priority::kHigh, kAgeBound - absl::Milliseconds(1));
  EXPECT_EQ(ChooseLeader(queues_, policy_, now_, high_led_in_a_row_),
            Priority::kNormal);
  EXPECT_THAT(Pack(), ElementsAre(1));
  EXPECT_THAT(Pack(), ElementsAre(2));
}

TEST_F(BatchPackingTest, RequestsPastTheAgeBoundArePackedFirstOldestFirst) {
  Add(1, 30, Priority::kNormal, absl::Milliseconds(700));
  Add(2, 30, Priority::kNormal, absl::Milliseconds(550));
  Add(3, 30, Priority::kHigh, absl::Milliseconds(600));
  Add(4, 30, Priority::kHigh);
  // 1 leads (the oldest, past the bound); then 3 and 2, past the bound,
  // oldest first, ahead of 4's higher priority.
  EXPECT_THAT(Pack(), ElementsAre(1, 3, 2));
  EXPECT_THAT(Pack(), ElementsAre(4));
}

TEST_F(BatchPackingTest, PacksFirstFitWithinTheMemoryLeft) {
  AddBytes(1, 10, 300);
  AddBytes(2, 10, 500);  // 300 + 500 > 600: skipped, keeps its place
  AddBytes(3, 10, 200);
  AddBytes(4, 10, 0);  // counts nothing
  EXPECT_THAT(Pack(600), ElementsAre(1, 3, 4));
  EXPECT_THAT(Pack(600), ElementsAre(2));
}

TEST_F(BatchPackingTest, ALeaderThatDoesNotFitTakesNothing) {
  Add(1, 10, Priority::kHigh, absl::ZeroDuration(), absl::InfiniteFuture(),
      700);
  AddBytes(2, 10, 100);
  high_led_in_a_row_ = 1;
  EXPECT_TRUE(Pack(600).empty());  // 2 would fit but must not overtake 1
  EXPECT_EQ(queues_.num_requests(), 2);
  EXPECT_EQ(high_led_in_a_row_, 1);  // unchanged
  EXPECT_THAT(Pack(800), ElementsAre(1, 2));
  EXPECT_EQ(high_led_in_a_row_, 2);
}

}  // namespace
}  // namespace favor::batching
