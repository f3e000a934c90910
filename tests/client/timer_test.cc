// The client's retry timer (src/timer.h): order, cancellation, shutdown.
#include "timer.h"

#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::client_internal {
namespace {

using ::testing::ElementsAre;

TEST(TimerTest, RunsTasksInTimeOrderNotBefore) {
  Timer timer;
  absl::Mutex mu;
  std::vector<int> order;
  absl::Notification last;
  const absl::Time start = absl::Now();
  absl::Time first_ran;
  timer.Schedule(start + absl::Milliseconds(120), [&] {
    absl::MutexLock lock(&mu);
    order.push_back(2);
    last.Notify();
  });
  timer.Schedule(start + absl::Milliseconds(60), [&] {
    absl::MutexLock lock(&mu);
    first_ran = absl::Now();
    order.push_back(1);
  });
  ASSERT_TRUE(last.WaitForNotificationWithTimeout(absl::Seconds(10)));
  absl::MutexLock lock(&mu);
  EXPECT_THAT(order, ElementsAre(1, 2));
  EXPECT_GE(first_ran - start, absl::Milliseconds(60));
}

TEST(TimerTest, CancelledTasksDoNotRun) {
  Timer timer;
  bool ran = false;
  const Timer::Id id =
      timer.Schedule(absl::Now() + absl::Seconds(30), [&] { ran = true; });
  EXPECT_TRUE(timer.Cancel(id));
  EXPECT_FALSE(timer.Cancel(id));  // gone already
  timer.Shutdown();
  EXPECT_FALSE(ran);
}

TEST(TimerTest, ShutdownRunsPendingTasksNowAndLaterOnesInline) {
  Timer timer;
  int ran = 0;
  timer.Schedule(absl::Now() + absl::Hours(1), [&] { ++ran; });
  const absl::Time start = absl::Now();
  timer.Shutdown();
  EXPECT_EQ(ran, 1);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(timer.Schedule(absl::Now() + absl::Hours(1), [&] { ++ran; }), 0u);
  EXPECT_EQ(ran, 2);
}

TEST(TimerTest, CancelWaitsForARunningTask) {
  Timer timer;
  absl::Notification started, release;
  bool finished = false;
  const Timer::Id id = timer.Schedule(absl::Now(), [&] {
    started.Notify();
    release.WaitForNotification();
    finished = true;
  });
  started.WaitForNotification();
  std::thread releaser([&] {
    absl::SleepFor(absl::Milliseconds(50));
    release.Notify();
  });
  EXPECT_FALSE(timer.Cancel(id));  // returns once the task has returned
  EXPECT_TRUE(finished);
  releaser.join();
}

}  // namespace
}  // namespace favor::client_internal
