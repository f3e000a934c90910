// ReloadWorker (server/app/reload_worker.h): a request returns at once while a
// pass runs, requests made meanwhile merge into one pass after it (with a
// retry of failed folders if any asked for one), and Stop lets the running
// pass finish.
#include "server/app/reload_worker.h"

#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor {
namespace {

using ::testing::ElementsAre;

TEST(ReloadWorkerTest, RequestsDuringAPassMergeIntoOneAfterIt) {
  absl::Mutex mu;
  std::vector<bool> passes;  // retry_failed of each pass, in order
  absl::Notification first_started, release_first;
  ReloadWorker worker([&](bool retry_failed) {
    {
      absl::MutexLock lock(&mu);
      passes.push_back(retry_failed);
    }
    if (!first_started.HasBeenNotified()) {
      first_started.Notify();
      release_first.WaitForNotification();
    }
  });
  worker.Request(/*retry_failed=*/false);
  ASSERT_TRUE(first_started.WaitForNotificationWithTimeout(absl::Seconds(30)));
  // The first pass is held: these return at once, and merge.
  const absl::Time start = absl::Now();
  worker.Request(false);
  worker.Request(true);
  worker.Request(false);
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  release_first.Notify();
  ASSERT_TRUE(worker.WaitUntilIdle(absl::Seconds(30)));
  absl::MutexLock lock(&mu);
  EXPECT_THAT(passes, ElementsAre(false, true));
}

TEST(ReloadWorkerTest, StopLetsTheRunningPassFinishAndRunsNoOther) {
  int passes = 0;
  absl::Notification started, release;
  ReloadWorker worker([&](bool) {
    ++passes;
    started.Notify();
    release.WaitForNotification();
  });
  worker.Request(false);
  ASSERT_TRUE(started.WaitForNotificationWithTimeout(absl::Seconds(30)));
  worker.Request(false);
  absl::Notification stopped;
  std::thread stopper([&] {
    worker.Stop();
    stopped.Notify();
  });
  EXPECT_FALSE(stopped.WaitForNotificationWithTimeout(absl::Milliseconds(100)));
  release.Notify();
  stopper.join();
  EXPECT_EQ(passes, 1);
}

}  // namespace
}  // namespace favor
