// The batcher's side of a call refused in the middle (issue 39): the parts
// of one call (an EnqueueGroup, enqueued in order until one is refused, as
// the service does) refused at every position k by the real causes, made
// to happen at part k by Options::admission_hook_for_testing: a drain begun
// (Shutdown, from the hook), a deadline passed (the fake clock moved to
// the call's deadline) and a full queue (another call's request and the
// k parts before fill max_queue_requests). Every part enqueued is answered
// exactly once, the refused one with the cause's code; nothing stays
// queued and the memory budget gets every byte back. Also built under
// ThreadSanitizer (label tsan) and AddressSanitizer (label asan).
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/batching/batcher.h"
#include "server/batching/memory_budget.h"
#include "tests/batching/batcher_fixture.h"

namespace favor::batching {
namespace {

enum class Cause { kDrain, kDeadline, kFullQueue };

constexpr int kParts = 5;
constexpr int64_t kPartTokens = 5;
constexpr int64_t kPartBytes = 1000;
// Each run's ids start at 100 × (k + 1); another call's request, queued
// before the group (full queue), is that + 99.
uint64_t IdOf(int k, int part) { return 100 * (k + 1) + part; }
uint64_t OtherIdOf(int k) { return IdOf(k, 99); }

class BatcherPartRefusalTest : public BatcherTest {
 protected:
  void SetUp() override {
    MemoryBudget::Options budget;
    budget.max_bytes = int64_t{1} << 20;
    budget_ = *MemoryBudget::Create(std::move(budget));
  }
  void TearDown() override {
    BatcherTest::TearDown();  // the batcher first: it holds the budget
  }

  // Enqueues the call's parts in order, inside one EnqueueGroup, until one
  // is refused (as EnqueueEmbed does), with part k refused by `cause`.
  void RunCall(Cause cause, int k) {
    Batcher::Options options = TestOptions();
    options.memory_budget = budget_.get();
    if (cause == Cause::kFullQueue) options.max_queue_requests = k + 1;
    const absl::Time deadline = clock_.Now() + absl::Seconds(1);
    options.admission_hook_for_testing = [this, cause, k,
                                          deadline](Request& request) {
      if (request.id != IdOf(k, k)) return absl::OkStatus();
      if (cause == Cause::kDrain) batcher_->Shutdown(absl::ZeroDuration());
      if (cause == Cause::kDeadline) clock_.SetTime(deadline);
      return absl::OkStatus();
    };
    Start(options);
    if (cause == Cause::kFullQueue) {
      ASSERT_OK(Add(OtherIdOf(k), kPartTokens));
    }
    {
      const Batcher::EnqueueGroup group(batcher_.get());
      for (int i = 0; i < kParts; ++i) {
        auto request = log_.MakeRequest(IdOf(k, i), kPartTokens,
                                        Priority::kNormal, deadline);
        request->memory_bytes = kPartBytes;
        if (!batcher_->Enqueue(std::move(request)).ok()) break;
      }
    }
    // Whatever is left runs (or was answered by the drain).
    batcher_->Shutdown(absl::InfiniteDuration());
  }

  std::unique_ptr<MemoryBudget> budget_;
};

absl::StatusCode CodeOf(Cause cause) {
  switch (cause) {
    case Cause::kDrain: return absl::StatusCode::kUnavailable;
    case Cause::kDeadline: return absl::StatusCode::kDeadlineExceeded;
    case Cause::kFullQueue: return absl::StatusCode::kResourceExhausted;
  }
  return absl::StatusCode::kUnknown;
}

void ExpectRefusedCleanly(Cause cause, int k,
                          const testing::CompletionLog& log, Batcher& batcher,
                          const MemoryBudget& budget) {
  const std::string what = absl::StrCat("cause ", static_cast<int>(cause),
                                        ", part ", k);
  for (int i = 0; i < kParts; ++i) {
    // Parts after the refused one are never enqueued.
    EXPECT_EQ(log.Count(IdOf(k, i)), i <= k ? 1 : 0)
        << what << ": part " << i;
  }
  const absl::Status refused = log.StatusOf(IdOf(k, k));
  EXPECT_EQ(refused.code(), CodeOf(cause)) << what << ": " << refused;
  for (int i = 0; i < k; ++i) {
    // The parts before: computed, or answered by the same cause (a drain
    // drops what is queued; a deadline passed expires it).
    const absl::Status status = log.StatusOf(IdOf(k, i));
    EXPECT_TRUE(status.ok() || status.code() == CodeOf(cause))
        << what << ": part " << i << ": " << status;
  }
  if (cause == Cause::kFullQueue) {
    EXPECT_EQ(log.Count(OtherIdOf(k)), 1) << what;
    EXPECT_NE(refused.message().find("retry after"), std::string::npos)
        << refused;
  }
  EXPECT_EQ(batcher.NumQueuedRequests(), 0) << what;
  EXPECT_EQ(batcher.NumQueuedTokens(), 0) << what;
  EXPECT_EQ(budget.reserved_bytes(), 0) << what;
}

TEST_F(BatcherPartRefusalTest, DrainBegunAtEveryPart) {
  for (int k = 0; k < kParts; ++k) {
    ASSERT_NO_FATAL_FAILURE(RunCall(Cause::kDrain, k));
    ExpectRefusedCleanly(Cause::kDrain, k, log_, *batcher_, *budget_);
  }
}

TEST_F(BatcherPartRefusalTest, DeadlinePassedAtEveryPart) {
  for (int k = 0; k < kParts; ++k) {
    ASSERT_NO_FATAL_FAILURE(RunCall(Cause::kDeadline, k));
    ExpectRefusedCleanly(Cause::kDeadline, k, log_, *batcher_, *budget_);
  }
}

TEST_F(BatcherPartRefusalTest, QueueFullAtEveryPart) {
  for (int k = 0; k < kParts; ++k) {
    ASSERT_NO_FATAL_FAILURE(RunCall(Cause::kFullQueue, k));
    ExpectRefusedCleanly(Cause::kFullQueue, k, log_, *batcher_,
                         *budget_);
  }
}

// The hook's own refusal (a status it returns) completes the request once,
// before Enqueue returns, and Enqueue returns that status.
TEST_F(BatcherPartRefusalTest, AStatusFromTheHookRefusesThePart) {
  Batcher::Options options = TestOptions();
  options.admission_hook_for_testing = [](Request& request) {
    return request.id == 1 ? absl::UnavailableError("hook") : absl::OkStatus();
  };
  Start(options);
  ASSERT_OK(Add(0, kPartTokens));
  const absl::Status status = Add(1, kPartTokens);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(log_.Count(1), 1);
  EXPECT_EQ(log_.StatusOf(1).message(), "hook");
  EXPECT_EQ(batcher_->NumQueuedRequests(), 1);
}

}  // namespace
}  // namespace favor::batching
