#include "server/batching/clock.h"

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace favor::batching {
namespace {

TEST(RealClockTest, NowIsWallClockTime) {
  const absl::Time before = absl::Now();
  const absl::Time now = RealClock::Get()->Now();
  EXPECT_GE(now, before);
  EXPECT_LE(now, absl::Now());
  EXPECT_EQ(RealClock::Get(), RealClock::Get());
}

TEST(RealClockTest, AwaitReturnsAtOnceWhenConditionHolds) {
  absl::Mutex mu;
  bool ready = true;
  absl::MutexLock lock(&mu);
  EXPECT_TRUE(RealClock::Get()->AwaitWithDeadline(&mu, absl::Condition(&ready),
                                                  absl::InfiniteFuture()));
}

TEST(RealClockTest, AwaitReturnsAtOnceWhenDeadlineHasPassed) {
  absl::Mutex mu;
  bool ready = false;
  absl::MutexLock lock(&mu);
  EXPECT_FALSE(RealClock::Get()->AwaitWithDeadline(
      &mu, absl::Condition(&ready), absl::Now() - absl::Seconds(1)));
}

}  // namespace
}  // namespace favor::batching
