// Every limit of the HTTP API at its exact value, one under and one over:
// the service's limits through /v1/embeddings and /v1/favor/Embed (with the
// JSON body limits that favor-server derives from them, which must never
// refuse a call the service takes), body bytes and X-Request-Timeout, and a
// maximal call with the default limits (2^20 tokens). Header bytes:
// api_limits_test.cc. gRPC: tests/service/limits_test.cc.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/http/api_fixture.h"

namespace favor::http {
namespace {

using ::testing::HasSubstr;

std::string IdList(int64_t n) {
  std::string text = "[";
  for (int64_t i = 0; i < n; ++i) absl::StrAppend(&text, i == 0 ? "1" : ",1");
  return absl::StrCat(text, "]");
}

// {"input":[[1,...],...]} with inputs of `lengths` tokens.
std::string EmbeddingsOf(const std::vector<int64_t>& lengths,
                         const std::string& extra = "") {
  std::vector<std::string> inputs;
  for (int64_t length : lengths) inputs.push_back(IdList(length));
  return absl::StrCat(R"({"input":[)", absl::StrJoin(inputs, ","), "]", extra,
                      "}");
}

class EdgeLimitsTest : public ApiTest {
 protected:
  // The service's limits, and the HTTP edge's copy of them, as favor-server
  // wires them.
  void StartSmall(HttpServer::Options http = {}) {
    service::FavorService::Options service;
    service.max_inputs_per_call = 4;
    service.max_tokens_per_call = 100;
    service.max_text_bytes_per_call = 12;
    service.max_spans_per_input = 3;
    service.embed_batching.max_queue_requests = queue_requests_;
    ApiHandler::Options api;
    api.call_limits = {service.max_inputs_per_call,
                       service.max_tokens_per_call,
                       service.max_spans_per_input};
    Start(std::move(service), std::move(http), std::move(api));
  }

  // 200 with one embedding per input, each of `values` values.
  void ExpectEmbedded(const std::string& body, size_t inputs,
                      size_t values = 4) {
    auto got = PostEmbeddings(body);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->status, 200) << body.substr(0, 80) << ": " << got->body;
    const nlohmann::json json = nlohmann::json::parse(got->body);
    ASSERT_EQ(json["data"].size(), inputs);
    EXPECT_EQ(json["data"][0]["embedding"].size(), values);
  }
  int64_t queue_requests_ = 1024;

  void ExpectRefused(const std::string& target, const std::string& body,
                     int status, const std::string& message) {
    const nlohmann::json error =
        ExpectError(testing::Post(port(), target, body), status);
    EXPECT_THAT(error.value("message", ""), HasSubstr(message))
        << body.substr(0, 80);
  }
};

TEST_F(EdgeLimitsTest, TokensPerInput) {
  StartSmall();
  ExpectEmbedded(EmbeddingsOf({63}), 1);
  ExpectEmbedded(EmbeddingsOf({64}), 1);
  ExpectRefused("/v1/embeddings", EmbeddingsOf({65}), 400,
                "65 tokens; at most 64 (max_tokens_per_input)");
}

TEST_F(EdgeLimitsTest, InputsPerCall) {
  StartSmall();
  ExpectEmbedded(EmbeddingsOf({1, 1, 1}), 3);
  ExpectEmbedded(EmbeddingsOf({1, 1, 1, 1}), 4);
  ExpectRefused("/v1/embeddings", EmbeddingsOf({1, 1, 1, 1, 1}), 400,
                "at most 4 inputs");
}

TEST_F(EdgeLimitsTest, TokensPerCall) {
  StartSmall();
  ExpectEmbedded(EmbeddingsOf({50, 49}), 2);
  ExpectEmbedded(EmbeddingsOf({40, 30, 30}), 3);
  ExpectEmbedded(EmbeddingsOf({25, 25, 25, 25}), 4);
  ExpectRefused("/v1/embeddings", EmbeddingsOf({50, 51}), 400,
                "at most 100 (max_tokens_per_call)");
}

TEST_F(EdgeLimitsTest, ACallOverTheQueueIs413WithoutRetryAfter) {
  queue_requests_ = 3;
  StartSmall();
  ExpectEmbedded(EmbeddingsOf({1, 1, 1}), 3);
  auto got = PostEmbeddings(EmbeddingsOf({1, 1, 1, 1}));
  const nlohmann::json error = ExpectError(got, 413);
  EXPECT_THAT(error.value("message", ""),
              HasSubstr("can never be queued together"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->Header("Retry-After"), "");
}

TEST_F(EdgeLimitsTest, TextBytesPerCall) {
  StartSmall();  // 12 bytes
  ExpectEmbedded(R"({"input":["the cat","sat."]})", 2);
  ExpectEmbedded(R"({"input":["the cat","sat. "]})", 2);
  ExpectRefused("/v1/embeddings", R"({"input":["the cat","sat on"]})", 400,
                "13 bytes of text in all; at most 12");
}

std::string SpansBody(int spans) {
  std::vector<std::string> list;
  for (int i = 0; i < spans; ++i) {
    list.push_back(absl::StrCat(R"({"begin":)", i, R"(,"end":)", i + 1, "}"));
  }
  return absl::StrCat(R"({"inputs":[{"tokenIds":[1,2,3,4,5,6,7,8],"spans":[)",
                      absl::StrJoin(list, ","), "]}]}");
}

TEST_F(EdgeLimitsTest, SpansPerInput) {
  StartSmall();  // 3 spans
  for (int spans : {2, 3}) {
    auto got = testing::Post(port(), "/v1/favor/Embed", SpansBody(spans));
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->status, 200) << got->body;
    const nlohmann::json json = nlohmann::json::parse(got->body);
    EXPECT_EQ(json["embeddings"][0]["spans"].size(),
              static_cast<size_t>(spans));
  }
  ExpectRefused("/v1/favor/Embed", SpansBody(4), 400,
                "spans has 4 spans; at most 3 (max_spans_per_input)");
}

TEST_F(EdgeLimitsTest, Dimensions) {
  StartSmall();  // FakeModel's embeddings have 4 values
  ExpectEmbedded(EmbeddingsOf({2}, R"(,"dimensions":1)"), 1, 1);
  ExpectEmbedded(EmbeddingsOf({2}, R"(,"dimensions":3)"), 1, 3);
  ExpectEmbedded(EmbeddingsOf({2}, R"(,"dimensions":4)"), 1, 4);
  ExpectRefused("/v1/embeddings", EmbeddingsOf({2}, R"(,"dimensions":5)"),
                400, "dimensions is 5; must be in [1, 4]");
}

// A valid body padded with spaces to exactly `bytes`.
std::string BodyOfBytes(size_t bytes) {
  std::string body = R"({"input":[[1,2]]})";
  body.resize(bytes, ' ');
  return body;
}

TEST_F(EdgeLimitsTest, BodyBytes) {
  HttpServer::Options http;
  http.max_body_bytes = 256;
  StartSmall(http);
  ExpectEmbedded(BodyOfBytes(255), 1);
  ExpectEmbedded(BodyOfBytes(256), 1);
  ExpectError(PostEmbeddings(BodyOfBytes(257)), 413);
  ExpectStillServing();
}

TEST_F(EdgeLimitsTest, ATimeoutOfZeroOrLessIsRefused) {
  StartSmall();
  testing::FetchOptions options;
  options.method = "POST";
  options.target = "/v1/embeddings";
  options.body = R"({"input":[[1]]})";
  for (const char* refused : {"0", "0s", "-1", "-0.5", "inf"}) {
    options.headers = {{"X-Request-Timeout", refused}};
    ExpectError(testing::Fetch(port(), options), 400);
  }
  // (A positive timeout shorter than the service's work is XRequestTimeout-
  // IsTheDeadline's: one of 1 ns is sent to gRPC as 1 ns, which the
  // server's millisecond clock may still see ahead.)
  options.headers = {{"X-Request-Timeout", "30"}};
  auto got = testing::Fetch(port(), options);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 200) << got->body;
}

// The default limits: a model of 2^20 tokens, and a call of every token a
// call, the queue and the model may hold.
class MaximalCallTest : public ApiTest {
 protected:
  MaximalCallTest() : ApiTest(int64_t{1} << 20) {}
};

TEST_F(MaximalCallTest, TwoToTheTwentyTokensAreServedAndOneMoreIsNot) {
  constexpr int64_t kMax = int64_t{1} << 20;
  Start();
  for (const std::vector<int64_t>& lengths :
       {std::vector<int64_t>{kMax}, std::vector<int64_t>{kMax / 2, kMax / 2}}) {
    auto got = PostEmbeddings(EmbeddingsOf(lengths));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->status, 200) << got->body.substr(0, 200);
  }
  const nlohmann::json one =
      ExpectError(PostEmbeddings(EmbeddingsOf({kMax + 1})), 400);
  EXPECT_THAT(one.value("message", ""),
              HasSubstr(absl::StrCat(kMax + 1, " tokens; at most ", kMax)));
  const nlohmann::json two =
      ExpectError(PostEmbeddings(EmbeddingsOf({kMax / 2, kMax / 2 + 1})), 400);
  EXPECT_THAT(two.value("message", ""),
              HasSubstr(absl::StrCat("at most ", kMax)));
}

}  // namespace
}  // namespace favor::http
