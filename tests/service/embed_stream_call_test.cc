// EmbedStream over real gRPC on loopback: answers by request_id, errors
// that do not end the stream, backpressure, and cancellation.
#include "server/service/embed_stream_call.h"

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/service/embed_validation.h"
#include "tests/service/fake_service_fixture.h"

namespace favor::service {
namespace {

using ::testing::HasSubstr;

TEST_F(FakeServiceTest, EmbedStreamAnswersEveryMessageByItsId) {
  Start();
  grpc::ClientContext context;
  auto stream = server_->stub().EmbedStream(&context);
  for (int i = 0; i < 6; ++i) {
    v1::EmbedStreamRequest message;
    message.set_request_id(absl::StrCat("m", i));
    // Message 3 is bad (empty sequence); 5 names an unknown model.
    *message.mutable_request() =
        i == 3 ? EmbedOf({{}}) : EmbedOf({{static_cast<uint32_t>(i), 1}});
    if (i == 5) message.mutable_request()->set_model("nope");
    ASSERT_TRUE(stream->Write(message));
  }
  stream->WritesDone();
  std::map<std::string, v1::EmbedStreamResponse> answers;
  v1::EmbedStreamResponse answer;
  while (stream->Read(&answer)) answers[answer.request_id()] = answer;
  ASSERT_TRUE(stream->Finish().ok());
  ASSERT_EQ(answers.size(), 6u);
  for (int i : {0, 1, 2, 4}) {
    const v1::EmbedStreamResponse& a = answers[absl::StrCat("m", i)];
    ASSERT_TRUE(a.has_response()) << i;
    EXPECT_EQ(a.response().embeddings(0).values(0), i + 1);  // sum of ids
  }
  EXPECT_EQ(answers["m3"].error().code(), grpc::INVALID_ARGUMENT);
  EXPECT_THAT(answers["m3"].error().message(),
              HasSubstr("inputs[0].token_ids is empty"));
  EXPECT_EQ(answers["m5"].error().code(), grpc::NOT_FOUND);
}

// A message refused by a full queue is answered once: answering it twice
// would free it twice and abort favor-server (favor-bench --streaming
// against a small queue does that). Room for two messages here: one running
// (held in the model), one queued.
TEST_F(FakeServiceTest, EmbedStreamMessageRefusedByAFullQueueIsAnsweredOnce) {
  FavorService::Options options;
  options.embed_batching.max_queue_requests = 1;
  options.embed_batching.max_batch_requests = 1;
  Start(options);
  model_.Hold();
  grpc::ClientContext context;
  auto stream = server_->stub().EmbedStream(&context);
  constexpr int kMessages = 8;
  for (int i = 0; i < kMessages; ++i) {
    v1::EmbedStreamRequest message;
    message.set_request_id(absl::StrCat(i));
    *message.mutable_request() = EmbedOf({{static_cast<uint32_t>(i + 1)}});
    ASSERT_TRUE(stream->Write(message));
  }
  // While the model is held, only refusals can be answered.
  std::map<std::string, v1::EmbedStreamResponse> answers;
  v1::EmbedStreamResponse answer;
  ASSERT_TRUE(stream->Read(&answer));
  EXPECT_EQ(answer.error().code(), grpc::RESOURCE_EXHAUSTED);
  EXPECT_THAT(answer.error().message(), HasSubstr("retry after"));
  answers[answer.request_id()] = answer;
  model_.Release();
  stream->WritesDone();
  while (stream->Read(&answer)) {
    EXPECT_TRUE(answers.emplace(answer.request_id(), answer).second)
        << "message " << answer.request_id() << " answered twice";
  }
  ASSERT_TRUE(stream->Finish().ok());
  ASSERT_EQ(answers.size(), static_cast<size_t>(kMessages));
  int computed = 0;
  for (const auto& [id, a] : answers) {
    if (a.has_error()) {
      EXPECT_EQ(a.error().code(), grpc::RESOURCE_EXHAUSTED) << id;
      continue;
    }
    ++computed;
    EXPECT_EQ(a.response().embeddings(0).values(0), std::stoi(id) + 1);
  }
  EXPECT_GE(computed, 1);
  EXPECT_LT(computed, kMessages);
  EXPECT_EQ(model_.sequences(), computed);
  // The server goes on serving.
  ASSERT_TRUE(CallEmbed(server_->stub(), EmbedOf({{3}})).ok());
}

TEST_F(FakeServiceTest, EmbedStreamBackpressureLosesNothing) {
  FavorService::Options options;
  options.max_stream_messages_in_flight = 2;
  Start(options);
  grpc::ClientContext context;
  auto stream = server_->stub().EmbedStream(&context);
  constexpr int kMessages = 40;
  std::thread writer([&] {
    for (int i = 0; i < kMessages; ++i) {
      v1::EmbedStreamRequest message;
      message.set_request_id(absl::StrCat(i));
      *message.mutable_request() = EmbedOf({{static_cast<uint32_t>(i % 90)}});
      ASSERT_TRUE(stream->Write(message));
    }
    stream->WritesDone();
  });
  std::set<std::string> ids;
  v1::EmbedStreamResponse answer;
  while (stream->Read(&answer)) {
    ASSERT_TRUE(answer.has_response()) << answer.error().message();
    EXPECT_EQ(answer.response().embeddings(0).values(0),
              std::stoi(answer.request_id()) % 90);
    ids.insert(answer.request_id());
  }
  writer.join();
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(ids.size(), static_cast<size_t>(kMessages));
}

// Reading a stream also stops at max_stream_answer_bytes_in_flight: at 1
// byte, one message at a time. Otherwise a client that sends large requests
// (token embeddings) and does not read makes the server hold 256 answers
// per stream, twice the memory budget.
TEST_F(FakeServiceTest, EmbedStreamStopsReadingAtTheAnswerBytesLimit) {
  FavorService::Options options;
  options.max_stream_answer_bytes_in_flight = 1;
  options.embed_batching.max_batch_requests = 1;
  Start(options);
  model_.Hold();
  grpc::ClientContext context;
  auto stream = server_->stub().EmbedStream(&context);
  constexpr int kMessages = 5;
  for (int i = 0; i < kMessages; ++i) {
    v1::EmbedStreamRequest message;
    message.set_request_id(absl::StrCat(i));
    *message.mutable_request() = EmbedOf({{static_cast<uint32_t>(i + 1)}});
    ASSERT_TRUE(stream->Write(message));
  }
  model_.WaitForCalls(1);
  absl::SleepFor(absl::Milliseconds(300));
  auto lease = server_->service().registry().Find("fake");
  ASSERT_TRUE(lease.ok());
  // One message computing, none read behind it (with the messages' limit
  // alone: four queued).
  EXPECT_EQ((*lease)->batcher->batcher()->NumQueuedRequests(), 0);
  model_.Release();
  stream->WritesDone();
  std::set<std::string> ids;
  v1::EmbedStreamResponse answer;
  while (stream->Read(&answer)) {
    ASSERT_TRUE(answer.has_response()) << answer.error().message();
    ids.insert(answer.request_id());
  }
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(ids.size(), static_cast<size_t>(kMessages));
}

// AnswerBytesBound (embed_validation.h) against the answers' real sizes:
// never below, and for token ids within a small factor.
TEST_F(FakeServiceTest, AnswerBytesBoundTheRealAnswers) {
  Start();
  const model::ModelDescription& model = model_.description();
  const EmbedLimits limits = LimitsFor(model, EmbedLimits());
  std::vector<v1::EmbedRequest> requests;
  requests.push_back(EmbedOf({{1, 2, 3}, {4}}));
  v1::EmbedRequest tokens = EmbedOf({{1, 2, 3, 4, 5, 6, 7, 8}, {9, 10}});
  tokens.set_include_token_embeddings(true);
  requests.push_back(tokens);
  tokens.set_token_embeddings_dtype(v1::DTYPE_FLOAT16);
  requests.push_back(tokens);
  v1::EmbedRequest spans = EmbedOf({{1, 2, 3, 4, 5, 6}});
  v1::Span* span = spans.mutable_inputs(0)->add_spans();
  span->set_begin(1);
  span->set_end(4);
  requests.push_back(spans);
  v1::EmbedRequest cut = EmbedOf({{1, 2, 3}});
  cut.set_dimensions(2);
  requests.push_back(cut);
  for (const v1::EmbedRequest& request : requests) {
    auto options = ResolveEmbedOptions(request, model, limits);
    ASSERT_TRUE(options.ok()) << options.status();
    const int64_t bound = AnswerBytesBound(request, model, *options, limits);
    v1::EmbedResponse response;
    ASSERT_TRUE(CallEmbed(server_->stub(), request, &response).ok())
        << request.DebugString();
    const int64_t actual = static_cast<int64_t>(response.ByteSizeLong());
    EXPECT_GE(bound, actual) << request.DebugString();
    EXPECT_LE(bound, 4 * actual + 2048) << request.DebugString();
  }
  // What token embeddings add (the answer's bulk), at each width: at least
  // what they add to the real answer, at most a field's bytes more.
  std::vector<uint32_t> ids(64);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint32_t>(i);
  const v1::EmbedRequest pooled = EmbedOf({ids});
  for (v1::Dtype dtype : {v1::DTYPE_FLOAT32, v1::DTYPE_FLOAT16}) {
    v1::EmbedRequest with_tokens = pooled;
    with_tokens.set_include_token_embeddings(true);
    with_tokens.set_token_embeddings_dtype(dtype);
    int64_t bound[2], actual[2];
    int i = 0;
    for (const v1::EmbedRequest* request :
         std::vector<const v1::EmbedRequest*>{&pooled, &with_tokens}) {
      auto options = ResolveEmbedOptions(*request, model, limits);
      ASSERT_TRUE(options.ok()) << options.status();
      bound[i] = AnswerBytesBound(*request, model, *options, limits);
      v1::EmbedResponse response;
      ASSERT_TRUE(CallEmbed(server_->stub(), *request, &response).ok());
      actual[i++] = static_cast<int64_t>(response.ByteSizeLong());
    }
    EXPECT_GE(bound[1] - bound[0], actual[1] - actual[0]) << dtype;
    EXPECT_LE(bound[1] - bound[0], actual[1] - actual[0] + 64) << dtype;
  }
}

TEST_F(FakeServiceTest, CancelledStreamDropsItsQueuedWork) {
  Start();
  model_.Hold();
  std::thread first(
      [&] { EXPECT_TRUE(CallEmbed(server_->stub(), EmbedOf({{1}})).ok()); });
  model_.WaitForCalls(1);
  {
    grpc::ClientContext context;
    auto stream = server_->stub().EmbedStream(&context);
    for (int i = 0; i < 3; ++i) {
      v1::EmbedStreamRequest message;
      *message.mutable_request() = EmbedOf({{2}});
      ASSERT_TRUE(stream->Write(message));
    }
    // A sleep: give the server a moment to read the messages and queue
    // their work, which it does without announcing it. Cancelling earlier
    // still passes, with less of the work queued to drop.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    context.TryCancel();
    EXPECT_EQ(stream->Finish().error_code(), grpc::CANCELLED);
  }
  // As in CancelledCallIsDropped: let the server see the RST_STREAM (a
  // sleep, for the reason given there).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  model_.Release();
  first.join();
  ASSERT_TRUE(CallEmbed(server_->stub(), EmbedOf({{3}})).ok());
  EXPECT_EQ(model_.sequences(), 2);
}

v1::EmbedStreamRequest StreamMessage(const std::string& id, uint32_t token) {
  v1::EmbedStreamRequest message;
  message.set_request_id(id);
  *message.mutable_request() = EmbedOf({{token}});
  return message;
}

// A stream its client keeps open would hold a shutdown until gRPC cancels
// it (CANCELLED, which clients do not retry): the service answers what it
// has read, then finishes it UNAVAILABLE.
TEST_F(FakeServiceTest, OpenStreamIsAnsweredThenFinishedUnavailableAtShutdown) {
  Start();
  grpc::ClientContext context;
  // A stream left open fails the test (DEADLINE_EXCEEDED) rather than hang.
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(20));
  auto stream = server_->stub().EmbedStream(&context);
  v1::EmbedStreamResponse answer;
  ASSERT_TRUE(stream->Write(StreamMessage("m0", 4)));
  ASSERT_TRUE(stream->Read(&answer));
  model_.Hold();
  ASSERT_TRUE(stream->Write(StreamMessage("m1", 5)));
  model_.WaitForCalls(2);  // m1 runs when the shutdown begins
  std::thread shutdown([&] { server_->service().Shutdown(absl::Seconds(30)); });
  model_.Release();
  shutdown.join();
  ASSERT_TRUE(stream->Read(&answer));
  EXPECT_EQ(answer.request_id(), "m1");
  ASSERT_TRUE(answer.has_response()) << answer.error().message();
  EXPECT_EQ(answer.response().embeddings(0).values(0), 5);
  EXPECT_FALSE(stream->Read(&answer));
  const grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("shutting down"));
  EXPECT_TRUE(server_->service().WaitForOpenCalls(absl::Seconds(30)));
}

TEST_F(FakeServiceTest, WhileDrainingStreamsAndTheirMessagesAreUnavailable) {
  Start();
  grpc::ClientContext open_context;
  auto open = server_->stub().EmbedStream(&open_context);
  v1::EmbedStreamResponse answer;
  ASSERT_TRUE(open->Write(StreamMessage("before", 1)));
  ASSERT_TRUE(open->Read(&answer));
  ASSERT_TRUE(answer.has_response());
  server_->service().StartDraining();
  // A message of a stream opened before: answered UNAVAILABLE, and the
  // stream goes on (it finishes OK once its client closes it).
  ASSERT_TRUE(open->Write(StreamMessage("after", 2)));
  ASSERT_TRUE(open->Read(&answer));
  EXPECT_EQ(answer.error().code(), grpc::UNAVAILABLE);
  open->WritesDone();
  EXPECT_FALSE(open->Read(&answer));
  EXPECT_TRUE(open->Finish().ok());
  // A new stream is refused as a whole.
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(20));
  auto stream = server_->stub().EmbedStream(&context);
  stream->Write(StreamMessage("new", 3));
  EXPECT_FALSE(stream->Read(&answer));
  EXPECT_EQ(stream->Finish().error_code(), grpc::UNAVAILABLE);
  EXPECT_TRUE(server_->service().WaitForOpenCalls(absl::Seconds(30)));
}

}  // namespace
}  // namespace favor::service
