#include "server/batching/request.h"

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace favor::batching {
namespace {

TEST(RequestTest, CompleteRunsTheCallbackOnce) {
  std::vector<absl::Status> answers;
  Request request([&](absl::Status status) { answers.push_back(status); });
  EXPECT_FALSE(request.completed());
  request.Complete(absl::OkStatus());
  EXPECT_TRUE(request.completed());
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_TRUE(answers[0].ok());
}

TEST(RequestTest, SecondCompletionIsABugAndIsIgnored) {
  std::vector<absl::Status> answers;
  Request request([&](absl::Status status) { answers.push_back(status); });
  request.Complete(absl::OkStatus());
  EXPECT_DEBUG_DEATH(request.Complete(absl::InternalError("again")),
                     "completed twice");
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_TRUE(answers[0].ok());
}

TEST(RequestTest, DestroyedWithoutAnswerCompletesWithInternal) {
  std::vector<absl::Status> answers;
  {
    Request request([&](absl::Status status) { answers.push_back(status); });
    request.id = 7;
  }
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].code(), absl::StatusCode::kInternal);
}

TEST(RequestTest, CancellationFollowsTheSharedFlag) {
  Request request(nullptr);
  EXPECT_FALSE(request.IsCancelled());  // No flag: never cancelled.
  auto flag = std::make_shared<CancellationFlag>();
  request.cancellation = flag;
  EXPECT_FALSE(request.IsCancelled());
  flag->Cancel();
  EXPECT_TRUE(request.IsCancelled());
  request.Complete(absl::CancelledError());
}

TEST(RequestTest, DefaultsAndPriorityNames) {
  Request request(nullptr);
  EXPECT_EQ(request.priority, Priority::kNormal);
  EXPECT_EQ(request.deadline, absl::InfiniteFuture());
  EXPECT_EQ(PriorityName(Priority::kHigh), "high");
  EXPECT_EQ(PriorityName(Priority::kNormal), "normal");
  request.Complete(absl::OkStatus());
}

}  // namespace
}  // namespace favor::batching
