// favor::EmbedStreamer against a real FavorService on loopback (FakeModel):
// many messages in flight over one EmbedStream, flow control, answers as
// they come (Next and on_result), per-message errors and deadlines, and
// cancellation.
#include "favor/embed_streamer.h"

#include <map>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "favor/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/service/test_server.h"

namespace favor {
namespace {

using service::FavorService;
using service::testing::FakeModel;
using service::testing::TestServer;

std::vector<float> FakeEmbedding(const TokenIds& ids) {
  float sum = 0;
  for (uint32_t id : ids) sum += static_cast<float>(id);
  return {sum, static_cast<float>(ids.size()), static_cast<float>(ids[0]), 1};
}

// Message i of a test stream: two tokens that identify it.
TokenIds InputOf(uint64_t i) {
  return {static_cast<uint32_t>(i % 90 + 1), static_cast<uint32_t>(i / 90)};
}

class EmbedStreamerTest : public ::testing::Test {
 protected:
  EmbedStreamerTest()
      : model_("fake"), server_(FavorService::Options(), {&model_}) {
    ClientOptions options;
    options.endpoints = {absl::StrCat("127.0.0.1:", server_.port())};
    options.default_timeout = absl::Seconds(30);
    client_ = *Client::Create(options);
  }

  std::unique_ptr<EmbedStreamer> Open(const EmbedStreamOptions& options = {}) {
    absl::StatusOr<std::unique_ptr<EmbedStreamer>> streamer =
        client_->OpenEmbedStream(options);
    EXPECT_TRUE(streamer.ok()) << streamer.status();
    return *std::move(streamer);
  }

  FakeModel model_;
  TestServer server_;
  std::unique_ptr<Client> client_;
};

TEST_F(EmbedStreamerTest, ManyInFlightAllAnsweredCorrectly) {
  constexpr int kMessages = 300;
  EmbedStreamOptions options;
  options.max_in_flight = 32;
  std::unique_ptr<EmbedStreamer> streamer = Open(options);
  std::map<uint64_t, StreamedEmbedResult> answers;
  std::thread reader([&] {
    while (std::optional<StreamedEmbedResult> answer = streamer->Next()) {
      const uint64_t id = answer->id;
      EXPECT_TRUE(answers.emplace(id, *std::move(answer)).second)
          << "id " << id << " answered twice";
    }
  });
  int most_in_flight = 0;
  for (uint64_t i = 0; i < kMessages; ++i) {
    absl::StatusOr<uint64_t> id = streamer->Send({InputOf(i)});
    ASSERT_TRUE(id.ok()) << id.status();
    EXPECT_EQ(*id, i);
    most_in_flight = std::max(most_in_flight, streamer->in_flight());
  }
  streamer->CloseSend();
  reader.join();
  EXPECT_TRUE(streamer->Finish().ok());
  EXPECT_LE(most_in_flight, 32);
  EXPECT_GT(most_in_flight, 1);  // the stream did carry several at a time
  ASSERT_EQ(answers.size(), static_cast<size_t>(kMessages));
  for (const auto& [id, answer] : answers) {
    ASSERT_TRUE(answer.result.ok()) << id << ": " << answer.result.status();
    ASSERT_EQ(answer.result->embeddings.size(), 1u);
    EXPECT_EQ(answer.result->embeddings[0].values, FakeEmbedding(InputOf(id)));
    EXPECT_EQ(answer.attempts, 1);
  }
  EXPECT_EQ(model_.sequences(), kMessages);
}

TEST_F(EmbedStreamerTest, OnResultGetsEveryAnswerAsItComes) {
  absl::Mutex mu;
  std::set<uint64_t> ids;
  EmbedStreamOptions options;
  options.max_in_flight = 8;
  options.on_result = [&](StreamedEmbedResult answer) {
    EXPECT_TRUE(answer.result.ok()) << answer.result.status();
    absl::MutexLock lock(&mu);
    ids.insert(answer.id);
  };
  std::unique_ptr<EmbedStreamer> streamer = Open(options);
  for (uint64_t i = 0; i < 50; ++i)
    ASSERT_TRUE(streamer->Send({InputOf(i)}).ok());
  EXPECT_TRUE(streamer->Finish().ok());
  EXPECT_FALSE(streamer->Next().has_value());
  absl::MutexLock lock(&mu);
  EXPECT_EQ(ids.size(), 50u);
}

TEST_F(EmbedStreamerTest, SendBlocksAtMaxInFlightUntilAnAnswerComes) {
  EmbedStreamOptions options;
  options.max_in_flight = 3;
  std::unique_ptr<EmbedStreamer> streamer = Open(options);
  model_.Hold();
  for (uint64_t i = 0; i < 3; ++i)
    ASSERT_TRUE(streamer->Send({InputOf(i)}).ok());
  EXPECT_EQ(streamer->in_flight(), 3);
  absl::Notification fourth_sent;
  std::thread sender([&] {
    EXPECT_TRUE(streamer->Send({InputOf(3)}).ok());
    fourth_sent.Notify();
  });
  // Still blocked while every answer is held back by the model.
  EXPECT_FALSE(
      fourth_sent.WaitForNotificationWithTimeout(absl::Milliseconds(300)));
  model_.Release();
  EXPECT_TRUE(fourth_sent.WaitForNotificationWithTimeout(absl::Seconds(20)));
  sender.join();
  streamer->CloseSend();
  int answered = 0;
  while (std::optional<StreamedEmbedResult> answer = streamer->Next()) {
    EXPECT_TRUE(answer->result.ok()) << answer->result.status();
    ++answered;
  }
  EXPECT_EQ(answered, 4);
  EXPECT_TRUE(streamer->Finish().ok());
}

TEST_F(EmbedStreamerTest, AFailedMessageDoesNotEndTheStream) {
  std::unique_ptr<EmbedStreamer> streamer = Open();
  ASSERT_EQ(*streamer->Send({{1, 2}}), 0u);
  ASSERT_EQ(*streamer->Send({{100}}), 1u);  // out of the vocabulary
  ASSERT_EQ(*streamer->Send({{3}}), 2u);
  streamer->CloseSend();
  std::map<uint64_t, absl::Status> statuses;
  while (std::optional<StreamedEmbedResult> answer = streamer->Next()) {
    statuses[answer->id] = answer->result.status();
  }
  EXPECT_TRUE(statuses[0].ok());
  EXPECT_EQ(statuses[1].code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(statuses[1].message()), ::testing::HasSubstr("100"));
  EXPECT_TRUE(statuses[2].ok());
  EXPECT_TRUE(streamer->Finish().ok());
}

TEST_F(EmbedStreamerTest, MessageDeadlineIsHonoured) {
  EmbedStreamOptions options;
  options.message_timeout = absl::Milliseconds(300);
  std::unique_ptr<EmbedStreamer> streamer = Open(options);
  model_.Hold();
  const absl::Time start = absl::Now();
  ASSERT_TRUE(streamer->Send({{1}}).ok());
  std::optional<StreamedEmbedResult> answer = streamer->Next();
  const absl::Duration elapsed = absl::Now() - start;
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->result.status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(elapsed, absl::Milliseconds(1500));
  model_.Release();
  EXPECT_TRUE(streamer->Finish().ok());
}

TEST_F(EmbedStreamerTest, StreamDeadlineEndsTheStream) {
  EmbedStreamOptions options;
  options.stream_timeout = absl::Milliseconds(300);
  std::unique_ptr<EmbedStreamer> streamer = Open(options);
  model_.Hold();
  ASSERT_TRUE(streamer->Send({{1}}).ok());
  const absl::Time start = absl::Now();
  EXPECT_EQ(streamer->Finish().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(1500));
  std::optional<StreamedEmbedResult> answer = streamer->Next();
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->result.status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(streamer->Send({{1}}).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  model_.Release();
}

TEST_F(EmbedStreamerTest, CancelAnswersOutstandingMessagesCancelled) {
  std::unique_ptr<EmbedStreamer> streamer = Open();
  model_.Hold();
  for (uint64_t i = 0; i < 3; ++i)
    ASSERT_TRUE(streamer->Send({InputOf(i)}).ok());
  model_.WaitForCalls(1);
  streamer->Cancel();
  EXPECT_EQ(streamer->Finish().code(), absl::StatusCode::kCancelled);
  int answered = 0;
  while (std::optional<StreamedEmbedResult> answer = streamer->Next()) {
    EXPECT_EQ(answer->result.status().code(), absl::StatusCode::kCancelled);
    ++answered;
  }
  EXPECT_EQ(answered, 3);
  model_.Release();
}

TEST_F(EmbedStreamerTest, SendAfterCloseIsRefused) {
  std::unique_ptr<EmbedStreamer> streamer = Open();
  streamer->CloseSend();
  EXPECT_EQ(streamer->Send({{1}}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(streamer->Finish().ok());
  EXPECT_FALSE(streamer->Next().has_value());
}

TEST_F(EmbedStreamerTest, DestroyingAnOpenStreamerCancelsIt) {
  std::unique_ptr<EmbedStreamer> streamer = Open();
  model_.Hold();
  ASSERT_TRUE(streamer->Send({{1}}).ok());
  model_.WaitForCalls(1);
  streamer.reset();  // must return although the answer is held
  model_.Release();
}

TEST_F(EmbedStreamerTest, RefusesBadOptions) {
  EmbedStreamOptions options;
  options.max_in_flight = 0;
  EXPECT_EQ(client_->OpenEmbedStream(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace favor
