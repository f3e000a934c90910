// Every limit of an Embed call at its exact value, one under and one over,
// through gRPC: tokens per input and per call, inputs per call, the queue's
// inputs and tokens (a call that could never be queued together), text
// bytes, spans per input, dimensions, answer message bytes, and a
// deadline already past. Small limits, and the default ones where they
// are cheap: with the default options tokens per call, queued tokens and a
// long model's sequence all stop at 2^20, and a call of exactly 2^20
// tokens must be served. The HTTP side: tests/http/api_edge_limits_test.cc.
#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/service/favor_service.h"
#include "tests/service/fake_service_fixture.h"
#include "tests/service/test_server.h"

namespace favor::service {
namespace {

using ::favor::service::testing::FakeModel;
using ::favor::service::testing::TestServer;
using ::testing::HasSubstr;

std::vector<uint32_t> Ids(int64_t n) {
  return std::vector<uint32_t>(static_cast<size_t>(n), 1);
}

// `request` is served (and answers one embedding per input) or refused
// with `code` and a message holding `message`.
void ExpectServed(v1::Favor::Stub& stub, const v1::EmbedRequest& request,
                  const std::string& what) {
  v1::EmbedResponse response;
  const grpc::Status status = CallEmbed(stub, request, &response);
  EXPECT_TRUE(status.ok()) << what << ": " << status.error_message();
  EXPECT_EQ(response.embeddings_size(), request.inputs_size()) << what;
}
void ExpectRefused(v1::Favor::Stub& stub, const v1::EmbedRequest& request,
                   grpc::StatusCode code, const std::string& message,
                   const std::string& what) {
  const grpc::Status status = CallEmbed(stub, request);
  EXPECT_EQ(status.error_code(), code) << what << ": "
                                       << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr(message)) << what;
}

class LimitsTest : public ::testing::Test {
 protected:
  LimitsTest() : model_("fake", 100, 64) {
    model_.set_tokenizer(testing::SmallVocabTokenizer());
  }
  void TearDown() override { model_.Release(); }

  // Small limits, each distinct so that a message names one only.
  void Start() {
    FavorService::Options options;
    options.max_inputs_per_call = 4;
    options.max_tokens_per_call = 100;
    options.max_text_bytes_per_call = 12;
    options.max_spans_per_input = 3;
    options.embed_batching.max_queue_requests = 6;
    options.embed_batching.max_queue_tokens = 90;
    Start(options);
  }
  void Start(const FavorService::Options& options) {
    server_ = std::make_unique<TestServer>(
        options, std::vector<const model::Model*>{&model_});
  }
  v1::Favor::Stub& stub() { return server_->stub(); }

  FakeModel model_;
  std::unique_ptr<TestServer> server_;
};

TEST_F(LimitsTest, TokensPerInputStopAtTheModelsLength) {
  Start();
  ExpectServed(stub(), EmbedOf({Ids(63)}), "63 of 64");
  ExpectServed(stub(), EmbedOf({Ids(64)}), "64 of 64");
  ExpectRefused(stub(), EmbedOf({Ids(65)}), grpc::INVALID_ARGUMENT,
                "65 tokens; at most 64 (max_tokens_per_input)", "65 of 64");
}

TEST_F(LimitsTest, InputsPerCall) {
  Start();
  ExpectServed(stub(), EmbedOf({{1}, {2}, {3}}), "3 of 4");
  ExpectServed(stub(), EmbedOf({{1}, {2}, {3}, {4}}), "4 of 4");
  ExpectRefused(stub(), EmbedOf({{1}, {2}, {3}, {4}, {5}}),
                grpc::INVALID_ARGUMENT, "at most 4 (max_inputs_per_call)",
                "5 of 4");
}

TEST_F(LimitsTest, TokensPerCall) {
  FavorService::Options options;
  options.max_tokens_per_call = 100;
  Start(options);
  ExpectServed(stub(), EmbedOf({Ids(50), Ids(49)}), "99 of 100");
  ExpectServed(stub(), EmbedOf({Ids(50), Ids(50)}), "100 of 100");
  ExpectRefused(stub(), EmbedOf({Ids(50), Ids(51)}), grpc::INVALID_ARGUMENT,
                "at most 100 (max_tokens_per_call)", "101 of 100");
}

TEST_F(LimitsTest, ACallTheQueueCanHoldIsServedAndOneMoreInputIsNot) {
  FavorService::Options options;
  options.max_inputs_per_call = 8;
  options.embed_batching.max_queue_requests = 6;
  Start(options);
  ExpectServed(stub(), EmbedOf({{1}, {1}, {1}, {1}, {1}}), "5 of 6");
  ExpectServed(stub(), EmbedOf({{1}, {1}, {1}, {1}, {1}, {1}}), "6 of 6");
  const grpc::Status over =
      CallEmbed(stub(), EmbedOf({{1}, {1}, {1}, {1}, {1}, {1}, {1}}));
  EXPECT_EQ(over.error_code(), grpc::RESOURCE_EXHAUSTED);
  EXPECT_THAT(over.error_message(),
              HasSubstr("can never be queued together"));
}

TEST_F(LimitsTest, ACallOfTheQueuesTokensIsServedAndOneMoreTokenIsNot) {
  FavorService::Options options;
  options.max_tokens_per_call = 200;
  options.embed_batching.max_queue_tokens = 90;
  Start(options);
  ExpectServed(stub(), EmbedOf({Ids(45), Ids(44)}), "89 of 90");
  ExpectServed(stub(), EmbedOf({Ids(45), Ids(45)}), "90 of 90");
  const grpc::Status over = CallEmbed(stub(), EmbedOf({Ids(45), Ids(46)}));
  EXPECT_EQ(over.error_code(), grpc::RESOURCE_EXHAUSTED);
  EXPECT_THAT(over.error_message(), HasSubstr("max_queue_tokens=90"));
}

v1::EmbedRequest TextsOf(const std::vector<std::string>& texts) {
  v1::EmbedRequest request;
  for (const std::string& text : texts) request.add_inputs()->set_text(text);
  return request;
}

TEST_F(LimitsTest, TextBytesPerCall) {
  Start();  // 12 bytes
  ExpectServed(stub(), TextsOf({"the cat", "sat."}), "11 of 12");
  ExpectServed(stub(), TextsOf({"the cat", "sat. "}), "12 of 12");
  ExpectRefused(stub(), TextsOf({"the cat", "sat on"}),
                grpc::INVALID_ARGUMENT,
                "hold 13 bytes of text in all; at most 12 "
                "(max_text_bytes_per_call)",
                "13 of 12");
}

v1::EmbedRequest WithSpans(int spans) {
  v1::EmbedRequest request = EmbedOf({Ids(8)});
  for (int i = 0; i < spans; ++i) {
    v1::Span* span = request.mutable_inputs(0)->add_spans();
    span->set_begin(i);
    span->set_end(i + 1);
  }
  return request;
}

TEST_F(LimitsTest, SpansPerInput) {
  Start();  // 3 spans
  for (int spans : {2, 3}) {
    v1::EmbedResponse response;
    const grpc::Status status = CallEmbed(stub(), WithSpans(spans), &response);
    ASSERT_TRUE(status.ok()) << spans << ": " << status.error_message();
    EXPECT_EQ(response.embeddings(0).spans_size(), spans);
  }
  ExpectRefused(stub(), WithSpans(4), grpc::INVALID_ARGUMENT,
                "inputs[0].spans has 4 spans; at most 3 (max_spans_per_input)",
                "4 of 3");
}

TEST_F(LimitsTest, SpansEndingAtTheLastTokenOrByte) {
  Start();
  v1::EmbedRequest ids = EmbedOf({Ids(8)});
  v1::Span* span = ids.mutable_inputs(0)->add_spans();
  span->set_begin(7);
  span->set_end(8);
  ExpectServed(stub(), ids, "a span on the last token");
  span->set_end(9);
  ExpectRefused(stub(), ids, grpc::INVALID_ARGUMENT,
                "past the end of the input's 8 token ids", "one past");
  v1::EmbedRequest text = TextsOf({"the cat"});
  span = text.mutable_inputs(0)->add_spans();
  span->set_begin(4);
  span->set_end(7);
  ExpectServed(stub(), text, "a span on the last byte");
  span->set_end(8);
  ExpectRefused(stub(), text, grpc::INVALID_ARGUMENT,
                "past the end of the input's 7 bytes of text", "one past");
}

TEST_F(LimitsTest, DimensionsFromOneToTheHiddenSize) {
  Start();  // FakeModel's embeddings have 4 values
  for (int dimensions : {0, 1, 3, 4}) {
    v1::EmbedRequest request = EmbedOf({{1, 2}});
    request.set_dimensions(dimensions);
    v1::EmbedResponse response;
    const grpc::Status status = CallEmbed(stub(), request, &response);
    ASSERT_TRUE(status.ok()) << dimensions << ": " << status.error_message();
    EXPECT_EQ(response.embeddings(0).values_size(),
              dimensions == 0 ? 4 : dimensions);
  }
  for (int dimensions : {-1, 5}) {
    v1::EmbedRequest request = EmbedOf({{1, 2}});
    request.set_dimensions(dimensions);
    ExpectRefused(stub(), request, grpc::INVALID_ARGUMENT,
                  absl::StrCat("dimensions is ", dimensions,
                               "; must be in [1, 4]"),
                  absl::StrCat(dimensions));
  }
}

// 64 token rows of 4 float32 values and the rest of the answer: at most
// 2224 bytes (TextServiceTest.AnAnswerOverTheMessageLimitIsRefused...).
TEST_F(LimitsTest, AnswerMessageBytes) {
  v1::EmbedRequest request = EmbedOf({Ids(64)});
  request.set_include_token_embeddings(true);
  for (int64_t limit : {2225, 2224}) {
    FavorService::Options options;
    options.max_answer_message_bytes = limit;
    Start(options);
    v1::EmbedResponse response;
    const grpc::Status status = CallEmbed(stub(), request, &response);
    ASSERT_TRUE(status.ok()) << limit << ": " << status.error_message();
    EXPECT_LE(static_cast<int64_t>(response.ByteSizeLong()), limit);
    server_.reset();
  }
  FavorService::Options options;
  options.max_answer_message_bytes = 2223;
  Start(options);
  const grpc::Status over = CallEmbed(stub(), request);
  EXPECT_EQ(over.error_code(), grpc::RESOURCE_EXHAUSTED);
  EXPECT_THAT(over.error_message(),
              HasSubstr("2224 bytes, over the 2223 a message may have"));
}

TEST_F(LimitsTest, ADeadlineAlreadyPastIsDeadlineExceeded) {
  Start();
  grpc::ClientContext context;
  // (A deadline of "now" is sent as a timeout of 1 ns, which the server's
  // millisecond clock may still see ahead: not a deterministic case.)
  context.set_deadline(std::chrono::system_clock::now() -
                       std::chrono::seconds(1));
  v1::EmbedResponse response;
  const grpc::Status status =
      stub().Embed(&context, EmbedOf({{1, 2}}), &response);
  EXPECT_EQ(status.error_code(), grpc::DEADLINE_EXCEEDED);
  EXPECT_EQ(model_.calls(), 0);
}

// The default options: a long model (2^20 tokens) takes one input of every
// token a call and the queue may hold, and two halves of it.
TEST(DefaultLimitsTest, AMaximalCallIsServedAndOneTokenMoreIsNot) {
  constexpr int64_t kMax = int64_t{1} << 20;
  FakeModel model("fake", 100, kMax);
  const FavorService::Options defaults;
  ASSERT_EQ(defaults.max_tokens_per_call, kMax);
  ASSERT_EQ(defaults.embed_batching.max_queue_tokens, kMax);
  TestServer server(defaults, {&model});
  ExpectServed(server.stub(), EmbedOf({Ids(kMax)}), "2^20 in one input");
  ExpectServed(server.stub(), EmbedOf({Ids(kMax / 2), Ids(kMax / 2)}),
               "2^20 in two inputs");
  ExpectRefused(server.stub(), EmbedOf({Ids(kMax + 1)}),
                grpc::INVALID_ARGUMENT,
                absl::StrCat(kMax + 1, " tokens; at most ", kMax),
                "2^20 + 1 in one input");
  ExpectRefused(server.stub(), EmbedOf({Ids(kMax / 2), Ids(kMax / 2 + 1)}),
                grpc::INVALID_ARGUMENT,
                absl::StrCat("at most ", kMax, " (max_tokens_per_call)"),
                "2^20 + 1 in two inputs");
  model.Release();
}

}  // namespace
}  // namespace favor::service
