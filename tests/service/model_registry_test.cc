// ModelRegistry (model_registry.cc): swaps, drains and frees revisions, and
// keeps load failures beside what serves. Revisions here have a fake
// runner and no model.
#include "server/service/model_registry.h"

#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "tests/batching/fake_model_runner.h"

namespace favor::service {
namespace {

using batching::testing::FakeJobRunner;
using batching::testing::FakeModelRunner;
using batching::testing::kTestTimeout;

// A revision whose runner the test can hold, and whose freeing it sees.
struct Revision {
  FakeModelRunner* runner = nullptr;  // Owned by the registry's revision.
  std::shared_ptr<absl::Notification> freed =
      std::make_shared<absl::Notification>();
  std::shared_ptr<std::thread::id> freed_on =
      std::make_shared<std::thread::id>();
};

std::unique_ptr<ServingModel> NewRevision(const std::string& name,
                                          const std::string& revision,
                                          Revision* handle) {
  auto model = std::make_unique<ServingModel>();
  model->name = name;
  model->revision = revision;
  auto runner = std::make_unique<FakeJobRunner<EmbedWork>>();
  handle->runner = &runner->fake;
  batching::Batcher::Options options;
  options.model_name = name;
  options.max_batch_requests = 1;  // A second request waits in the queue.
  model->batcher =
      *batching::JobBatcher<EmbedWork>::Create(options, runner.get(), nullptr);
  model->runner = std::move(runner);
  model->on_freed = [freed = handle->freed, on = handle->freed_on] {
    *on = std::this_thread::get_id();
    freed->Notify();
  };
  return model;
}

// Enqueues one request into `lease`'s batcher; `done` gets its status and,
// when given, `runs` the runner's run count as the request completes: read
// there, while the request's lease keeps the revision (and its runner)
// alive, not after, when the revision may already be freed.
absl::Status Enqueue(const ModelRegistry::Lease& lease,
                     std::shared_ptr<absl::Notification> done,
                     std::shared_ptr<absl::Status> status,
                     const FakeModelRunner* runner = nullptr,
                     std::shared_ptr<int> runs = nullptr) {
  auto request = std::make_unique<batching::Job<EmbedWork>>(
      std::make_shared<EmbedWork>(),
      [lease, done, status, runner, runs](absl::Status result) {
        *status = result;
        if (runner != nullptr) *runs = runner->num_runs();
        done->Notify();
      });
  request->num_tokens = 1;
  return lease->batcher->Enqueue(std::move(request));
}

TEST(ModelRegistryTest, NewLookupsGetTheNewRevisionAtOnce) {
  ModelRegistry registry;
  Revision v1, v2;
  registry.Install(NewRevision("m", "r1", &v1));
  EXPECT_EQ((*registry.Find("m"))->revision, "r1");
  registry.Install(NewRevision("m", "r2", &v2));
  EXPECT_EQ((*registry.Find("m"))->revision, "r2");
  ASSERT_TRUE(registry.WaitUntilFreed(kTestTimeout));
  EXPECT_TRUE(v1.freed->HasBeenNotified());
  EXPECT_FALSE(v2.freed->HasBeenNotified());
}

TEST(ModelRegistryTest, OldRevisionFinishesItsCallsBeforeItIsFreed) {
  ModelRegistry registry;
  Revision v1, v2;
  registry.Install(NewRevision("m", "r1", &v1));
  ModelRegistry::Lease held = *registry.Find("m");
  v1.runner->Block();
  auto done = std::make_shared<absl::Notification>();
  auto status = std::make_shared<absl::Status>(absl::UnknownError("unset"));
  ASSERT_TRUE(Enqueue(held, done, status).ok());
  ASSERT_TRUE(v1.runner->WaitForRunning(1));
  // Accepted, still queued behind the running one when the swap comes.
  auto queued_done = std::make_shared<absl::Notification>();
  auto queued = std::make_shared<absl::Status>(absl::UnknownError("unset"));
  auto runs = std::make_shared<int>(0);
  ASSERT_TRUE(Enqueue(held, queued_done, queued, v1.runner, runs).ok());
  held.reset();  // The requests' callbacks hold the revision now.

  registry.Install(NewRevision("m", "r2", &v2));
  EXPECT_EQ(registry.num_retiring(), 1);
  // Still computing: not freed, whatever the swap did.
  EXPECT_FALSE(registry.WaitUntilFreed(absl::Milliseconds(50)));
  EXPECT_FALSE(v1.freed->HasBeenNotified());

  v1.runner->Unblock();
  ASSERT_TRUE(done->WaitForNotificationWithTimeout(kTestTimeout));
  ASSERT_TRUE(queued_done->WaitForNotificationWithTimeout(kTestTimeout));
  EXPECT_TRUE(status->ok()) << *status;
  EXPECT_TRUE(queued->ok()) << *queued;
  EXPECT_EQ(*runs, 2);  // both ran on r1's runner
  ASSERT_TRUE(registry.WaitUntilFreed(kTestTimeout));
  EXPECT_TRUE(v1.freed->HasBeenNotified());
  EXPECT_EQ(registry.num_retiring(), 0);
}

TEST(ModelRegistryTest, AHeldLeaseKeepsItsRevisionUsable) {
  ModelRegistry registry;
  Revision v1, v2;
  registry.Install(NewRevision("m", "r1", &v1));
  ModelRegistry::Lease held = *registry.Find("m");
  registry.Install(NewRevision("m", "r2", &v2));
  // A call that looked the model up before the swap still enqueues into
  // its revision, which computes it.
  auto done = std::make_shared<absl::Notification>();
  auto status = std::make_shared<absl::Status>(absl::UnknownError("unset"));
  ASSERT_TRUE(Enqueue(held, done, status).ok());
  ASSERT_TRUE(done->WaitForNotificationWithTimeout(kTestTimeout));
  EXPECT_TRUE(status->ok()) << *status;
  EXPECT_EQ(v1.runner->num_runs(), 1);
  EXPECT_FALSE(v1.freed->HasBeenNotified());
  held.reset();
  ASSERT_TRUE(registry.WaitUntilFreed(kTestTimeout));
}

TEST(ModelRegistryTest, RevisionsAreFreedOnTheRegistrysThread) {
  ModelRegistry registry;
  Revision v1, v2;
  registry.Install(NewRevision("m", "r1", &v1));
  ModelRegistry::Lease held = *registry.Find("m");
  registry.Install(NewRevision("m", "r2", &v2));
  held.reset();  // The last lease, dropped here: must not free here.
  ASSERT_TRUE(v1.freed->WaitForNotificationWithTimeout(kTestTimeout));
  EXPECT_NE(*v1.freed_on, std::this_thread::get_id());
}

TEST(ModelRegistryTest, FailureLeavesWhatServesUntouched) {
  ModelRegistry registry;
  Revision v1, v2;
  registry.Install(NewRevision("m", "r1", &v1));
  registry.RecordFailure("m", absl::InvalidArgumentError("bad config.json"));
  EXPECT_EQ((*registry.Find("m"))->revision, "r1");
  EXPECT_EQ(registry.Failures().at("m").message(), "bad config.json");
  EXPECT_EQ(registry.num_retiring(), 0);
  EXPECT_FALSE(v1.freed->HasBeenNotified());
  registry.Install(NewRevision("m", "r2", &v2));
  EXPECT_TRUE(registry.Failures().empty());
}

TEST(ModelRegistryTest, AFolderThatNeverLoadedIsNotFoundWithItsError) {
  ModelRegistry registry;
  Revision v1;
  registry.Install(NewRevision("m", "r1", &v1));
  registry.RecordFailure("broken", absl::InvalidArgumentError("truncated"));
  absl::StatusOr<ModelRegistry::Lease> found = registry.Find("broken");
  EXPECT_EQ(found.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(found.status().message().find("truncated"), std::string::npos);
  EXPECT_EQ(registry.Serving().size(), 1u);
}

TEST(ModelRegistryTest, RemovedModelIsNotFoundAndFreedAfterItsCalls) {
  ModelRegistry registry;
  Revision a, b;
  registry.Install(NewRevision("a", "r1", &a));
  registry.Install(NewRevision("b", "r1", &b));
  ModelRegistry::Lease held = *registry.Find("b");
  ASSERT_TRUE(registry.Remove("b").ok());
  EXPECT_EQ(registry.Find("b").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(registry.Remove("b").code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(b.freed->HasBeenNotified());
  held.reset();
  ASSERT_TRUE(registry.WaitUntilFreed(kTestTimeout));
  EXPECT_TRUE(b.freed->HasBeenNotified());
  EXPECT_FALSE(a.freed->HasBeenNotified());
}

}  // namespace
}  // namespace favor::service
