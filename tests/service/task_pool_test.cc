// TaskPool on its own: tasks run on the pool's named threads, a full queue
// is refused with a retry hint, and Shutdown runs what was queued.
#include "server/service/task_pool.h"

#include <pthread.h>

#include <atomic>
#include <string>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/batching/retry_hint.h"

namespace favor::service {
namespace {

using ::testing::HasSubstr;

std::string CurrentThreadName() {
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  return name;
}

std::unique_ptr<TaskPool> Pool(int threads, int64_t queued) {
  TaskPool::Options options;
  options.name = "tokenizer";
  options.num_threads = threads;
  options.max_queued_tasks = queued;
  auto pool = TaskPool::Create(options);
  EXPECT_TRUE(pool.ok()) << pool.status();
  return pool.ok() ? *std::move(pool) : nullptr;
}

TEST(TaskPoolTest, RunsTasksOnItsOwnNamedThreads) {
  auto pool = Pool(2, 8);
  ASSERT_NE(pool, nullptr);
  std::string name;
  absl::Notification ran;
  ASSERT_TRUE(pool->Schedule([&] {
                    name = CurrentThreadName();
                    ran.Notify();
                  })
                  .ok());
  ran.WaitForNotification();
  EXPECT_EQ(name, "favor-tokenizer");
  EXPECT_EQ(ThreadName("a-very-long-pool-name"), "favor-a-very-lo");
}

TEST(TaskPoolTest, AFullQueueIsRefusedWithARetryHint) {
  auto pool = Pool(1, 2);
  ASSERT_NE(pool, nullptr);
  absl::Notification started, release;
  ASSERT_TRUE(pool->Schedule([&] {
                    started.Notify();
                    release.WaitForNotification();
                  })
                  .ok());
  started.WaitForNotification();  // the thread is busy; the queue is empty
  std::atomic<int> ran{0};
  EXPECT_TRUE(pool->Schedule([&] { ++ran; }).ok());
  EXPECT_TRUE(pool->Schedule([&] { ++ran; }).ok());
  const absl::Status full = pool->Schedule([&] { ++ran; });
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(full.message(), HasSubstr("tokenizer queue is full (2 calls"));
  EXPECT_TRUE(batching::RetryAfter(full).has_value());
  release.Notify();
  pool->Shutdown();
  EXPECT_EQ(ran.load(), 2);
}

TEST(TaskPoolTest, ShutdownRunsWhatIsQueuedThenRefuses) {
  auto pool = Pool(1, 100);
  ASSERT_NE(pool, nullptr);
  std::atomic<int> ran{0};
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(pool->Schedule([&] { ++ran; }).ok());
  }
  pool->Shutdown();
  EXPECT_EQ(ran.load(), 50);
  EXPECT_EQ(pool->Schedule([] {}).code(), absl::StatusCode::kUnavailable);
  pool->Shutdown();  // idempotent
}

TEST(TaskPoolTest, RefusesBadOptions) {
  TaskPool::Options options;
  options.num_threads = 0;
  EXPECT_EQ(TaskPool::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace favor::service
