#include "server/batching/fake_clock.h"

#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace favor::batching {
namespace {

TEST(FakeClockTest, TimeMovesOnlyWhenAdvanced) {
  const absl::Time start = absl::FromUnixSeconds(1234);
  FakeClock clock(start);
  EXPECT_EQ(clock.Now(), start);
  EXPECT_EQ(clock.Now(), start);
  clock.Advance(absl::Milliseconds(5));
  EXPECT_EQ(clock.Now(), start + absl::Milliseconds(5));
  clock.SetTime(start + absl::Seconds(2));
  EXPECT_EQ(clock.Now(), start + absl::Seconds(2));
}

// A thread waiting on the clock, with a condition another thread can set.
class Waiter {
 public:
  Waiter(FakeClock* clock, absl::Time deadline)
      : thread_([this, clock, deadline] {
          absl::MutexLock lock(&mu_);
          result_ = clock->AwaitWithDeadline(&mu_, absl::Condition(&ready_),
                                             deadline);
          returned_ = true;
        }) {}
  ~Waiter() {
    if (thread_.joinable()) thread_.join();
  }

  void SetReady() {
    absl::MutexLock lock(&mu_);
    ready_ = true;
  }
  bool returned() {
    absl::MutexLock lock(&mu_);
    return returned_;
  }
  // Waits (in real time) for the waiter to return; gives its result.
  bool Result() {
    thread_.join();
    absl::MutexLock lock(&mu_);
    return result_;
  }

 private:
  absl::Mutex mu_;
  bool ready_ ABSL_GUARDED_BY(mu_) = false;
  bool returned_ ABSL_GUARDED_BY(mu_) = false;
  bool result_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

TEST(FakeClockTest, AdvancingToTheDeadlineWakesTheWaiter) {
  FakeClock clock;
  const absl::Time deadline = clock.Now() + absl::Milliseconds(5);
  {
    Waiter waiter(&clock, deadline);
    ASSERT_TRUE(clock.BlockUntilWaiting(deadline));
    EXPECT_EQ(clock.NumWaiters(), 1);
    clock.Advance(absl::Milliseconds(4));
    // Not yet: the waiter re-checked and is still registered and blocked.
    EXPECT_FALSE(waiter.returned());
    EXPECT_EQ(clock.NumWaiters(), 1);
    clock.Advance(absl::Milliseconds(1));
    EXPECT_FALSE(waiter.Result());  // Timed out: the condition never held.
  }
  EXPECT_EQ(clock.NumWaiters(), 0);
}

TEST(FakeClockTest, ConditionWakesTheWaiterBeforeTheDeadline) {
  FakeClock clock;
  Waiter waiter(&clock, absl::InfiniteFuture());
  ASSERT_TRUE(clock.BlockUntilNumWaiters(1));
  waiter.SetReady();
  EXPECT_TRUE(waiter.Result());
  EXPECT_EQ(clock.NumWaiters(), 0);
}

TEST(FakeClockTest, PassedDeadlineReturnsAtOnce) {
  FakeClock clock;
  absl::Mutex mu;
  bool ready = false;
  absl::MutexLock lock(&mu);
  EXPECT_FALSE(
      clock.AwaitWithDeadline(&mu, absl::Condition(&ready), clock.Now()));
}

TEST(FakeClockTest, BlockUntilGivesUpAfterItsRealTimeout) {
  FakeClock clock;
  EXPECT_FALSE(clock.BlockUntilNumWaiters(1, absl::Milliseconds(1)));
  EXPECT_FALSE(clock.BlockUntilWaiting(clock.Now(), absl::Milliseconds(1)));
}

}  // namespace
}  // namespace favor::batching
