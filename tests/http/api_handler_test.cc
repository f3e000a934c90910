// The HTTP API over real HTTP and real gRPC on loopback (api_fixture.h):
// OpenAI's shapes against the gRPC answers, and every bad request answered
// with its code and OpenAI's error shape while the server keeps serving.
#include "server/http/api_handler.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "server/http/api_errors.h"
#include "server/metrics/metric_names.h"
#include "tests/http/api_fixture.h"
#include "tests/metrics/scrape.h"
#include "tests/service/fake_service_fixture.h"

namespace favor::http {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

v1::EmbedResponse GrpcEmbed(v1::Favor::Stub& stub,
                            const v1::EmbedRequest& request) {
  grpc::ClientContext context;
  v1::EmbedResponse response;
  const grpc::Status status = stub.Embed(&context, request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response;
}

v1::EmbedRequest IdsRequest(const std::vector<std::vector<uint32_t>>& inputs) {
  v1::EmbedRequest request;
  for (const auto& ids : inputs) {
    request.add_inputs()->mutable_token_ids()->Add(ids.begin(), ids.end());
  }
  return request;
}

std::vector<float> FloatsOfBase64(const std::string& text) {
  std::string bytes;
  EXPECT_TRUE(absl::Base64Unescape(text, &bytes));
  std::vector<float> values(bytes.size() / 4);
  std::memcpy(values.data(), bytes.data(), bytes.size());  // little-endian
  return values;
}

void ExpectEmbeddingsEqual(const nlohmann::json& data,
                           const v1::EmbedResponse& want) {
  ASSERT_EQ(data.size(), static_cast<size_t>(want.embeddings_size()));
  for (size_t i = 0; i < data.size(); ++i) {
    EXPECT_EQ(data[i]["object"], "embedding");
    EXPECT_EQ(data[i]["index"], i);
    const nlohmann::json& got = data[i]["embedding"];
    const std::vector<float> values =
        got.is_string() ? FloatsOfBase64(got) : got.get<std::vector<float>>();
    const auto& expected = want.embeddings(static_cast<int>(i)).values();
    ASSERT_EQ(values.size(), static_cast<size_t>(expected.size()));
    for (int j = 0; j < expected.size(); ++j) {
      EXPECT_NEAR(values[j], expected[j], 1e-6) << i << "," << j;
    }
  }
}

TEST_F(ApiTest, EmbeddingsEqualGrpcForEveryInputFormAndEncoding) {
  Start();
  const v1::EmbedRequest ids = IdsRequest({{5, 6, 7}, {8, 9}});
  v1::EmbedRequest texts;
  texts.add_inputs()->set_text("the cat sat");
  texts.add_inputs()->set_text("on the mat");
  const struct {
    std::string body;
    const v1::EmbedRequest* want;
  } cases[] = {
      {R"({"input":[[5,6,7],[8,9]]})", &ids},
      {R"({"input":["the cat sat","on the mat"],"model":"fake"})", &texts},
      {R"({"input":["the cat sat","on the mat"],"encoding_format":"base64"})",
       &texts},
      {R"({"input":[[5,6,7],[8,9]],"encoding_format":"float","user":"u"})",
       &ids},
  };
  for (const auto& c : cases) {
    auto got = PostEmbeddings(c.body);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->status, 200) << got->body;
    const auto json = nlohmann::json::parse(got->body);
    const v1::EmbedResponse want = GrpcEmbed(*stub_, *c.want);
    EXPECT_EQ(json["object"], "list");
    EXPECT_EQ(json["model"], "fake");
    EXPECT_EQ(json["usage"]["prompt_tokens"], want.num_tokens());
    EXPECT_EQ(json["usage"]["total_tokens"], want.num_tokens());
    ExpectEmbeddingsEqual(json["data"], want);
  }
}

// Server-Timing and TEI's headers, from the answer's ServerTiming: every
// batch costs the fake model at least 60 ms here.
TEST_F(ApiTest, EmbeddingsSayWhereTheTimeWent) {
  model_.SetCostPerCall(absl::Milliseconds(60));
  Start();
  auto got = PostEmbeddings(R"({"input":["the cat sat", "on the mat"]})");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->status, 200) << got->body;
  const auto json = nlohmann::json::parse(got->body);
  EXPECT_EQ(got->Header("x-compute-tokens"),
            std::to_string(json["usage"]["prompt_tokens"].get<int64_t>()));
  int64_t queue_millis = -1, compute_millis = -1;
  ASSERT_TRUE(absl::SimpleAtoi(got->Header("x-queue-time"), &queue_millis));
  ASSERT_TRUE(
      absl::SimpleAtoi(got->Header("x-inference-time"), &compute_millis));
  EXPECT_GE(queue_millis, 0);
  EXPECT_GE(compute_millis, 60);
  EXPECT_LT(compute_millis, 60'000);
  double queue_dur = -1, compute_dur = -1;
  ASSERT_EQ(std::sscanf(got->Header("Server-Timing").c_str(),
                        "queue;dur=%lf, compute;dur=%lf", &queue_dur,
                        &compute_dur),
            2)
      << got->Header("Server-Timing");
  // The same measurements: the headers in whole milliseconds, rounded down.
  EXPECT_EQ(static_cast<int64_t>(queue_dur), queue_millis);
  EXPECT_EQ(static_cast<int64_t>(compute_dur), compute_millis);
}

TEST_F(ApiTest, OneStringAndOneTokenListAreOneInputEach) {
  Start();
  v1::EmbedRequest text;
  text.add_inputs()->set_text("the cat");
  const v1::EmbedRequest ids = IdsRequest({{5, 6}});
  auto got = PostEmbeddings(R"({"input":"the cat"})");
  ASSERT_TRUE(got.ok() && got->status == 200) << got->body;
  ExpectEmbeddingsEqual(nlohmann::json::parse(got->body)["data"],
                        GrpcEmbed(*stub_, text));
  got = PostEmbeddings(R"({"input":[5,6]})");
  ASSERT_TRUE(got.ok() && got->status == 200) << got->body;
  ExpectEmbeddingsEqual(nlohmann::json::parse(got->body)["data"],
                        GrpcEmbed(*stub_, ids));
}

TEST_F(ApiTest, BadInputsGetTheirCodeAndOpenAIsErrorShape) {
  Start();
  const struct {
    std::string body;
    int status;
    std::string param;  // empty: null
  } cases[] = {
      {R"({"input":)", 400, ""},                       // malformed JSON
      {"not json at all", 400, ""},                    //
      {R"({"input":5})", 400, "input"},                // wrong types
      {R"({"input":true})", 400, "input"},             //
      {R"({"input":[1,"a"]})", 400, "input"},          //
      {R"({"input":[[1],"a"]})", 400, "input"},        //
      {R"({"input":[1.5]})", 400, "input"},            //
      {R"({"input":[-1]})", 400, "input"},             //
      {R"({"input":"a","dimensions":"x"})", 400, ""},  //
      {R"({"input":"a","foo":1})", 400, ""},           // unknown field
      {R"({})", 400, "input"},                         // no input
      {R"({"input":[]})", 400, "input"},               // empty input
      {R"({"input":""})", 400, "input"},               // empty string
      {R"({"input":["the",""]})", 400, "input"},       //
      {R"({"input":[[]]})", 400, "input"},             //
      {"{\"input\":\"\xff\xfe\"}", 400, ""},           // invalid UTF-8
      {R"({"input":"a","encoding_format":"hex"})", 400, "encoding_format"},
      {R"({"input":[[1000]]})", 400, ""},            // id out of vocab
      {R"({"input":"a","model":"nope"})", 404, ""},  // unknown model
  };
  for (const auto& c : cases) {
    const nlohmann::json error = ExpectError(PostEmbeddings(c.body), c.status);
    if (error.is_null()) continue;
    if (c.param.empty()) {
      EXPECT_TRUE(error["param"].is_null()) << c.body;
    } else {
      EXPECT_EQ(error["param"], c.param) << c.body;
    }
    if (c.status == 404) {
      EXPECT_EQ(error["code"], "model_not_found");
    }
    ExpectStillServing();
  }
}

// Protobuf's JSON parser takes time superlinear in the depth of nested
// arrays in a google.protobuf.Value (OpenAI's `input`), 70 s for 40,000 '[',
// on a thread of the event loop; the body is refused by its depth first.
// 40,000 levels outlast Fetch's 10 s timeout without that check.
TEST_F(ApiTest, DeeplyNestedJsonIsRefusedBeforeItIsParsed) {
  Start();
  const auto nested = [](int depth, absl::string_view open,
                         absl::string_view close) {
    std::string text;
    for (int i = 0; i < depth; ++i) absl::StrAppend(&text, open);
    for (int i = 0; i < depth; ++i) absl::StrAppend(&text, close);
    return text;
  };
  for (const std::string route : {"/v1/embeddings", "/v1/favor/Embed"}) {
    const std::string field =
        route == "/v1/embeddings" ? "input" : "inputs";
    for (const auto& [open, close] :
         {std::pair{"[", "]"}, std::pair{"{\"a\":", "}"}}) {
      const std::string deep = absl::StrCat(
          "{\"", field, "\":", nested(40000, open, close), "}");
      const auto error = ExpectError(testing::Post(port(), route, deep), 400);
      EXPECT_THAT(error["message"].get<std::string>(),
                  HasSubstr("more than 32 deep"))
          << route;
      // The limit counts the outer object: 31 more levels are parsed (and
      // refused for what they are), 32 are not.
      for (const int depth : {31, 32}) {
        const std::string body = absl::StrCat(
            "{\"", field, "\":", nested(depth, open, close), "}");
        const auto at = ExpectError(testing::Post(port(), route, body), 400);
        EXPECT_EQ(at["message"].get<std::string>().find("more than 32 deep") ==
                      std::string::npos,
                  depth == 31)
            << route << " " << depth << ": " << at["message"];
      }
    }
    // Brackets inside strings, escaped quotes included, do not count (the
    // unknown field makes the body a 400 of another kind).
    const std::string quoted = absl::StrCat("{\"", field, "\":[\"\\\"",
                                            nested(100, "[", ""),
                                            "\"],\"zzz\":1}");
    const auto error = ExpectError(testing::Post(port(), route, quoted), 400);
    EXPECT_EQ(error["message"].get<std::string>().find("more than 32 deep"),
              std::string::npos)
        << error["message"];
  }
  ExpectStillServing();
}

// A body that holds more than a call within the service's limits is
// refused before protobuf parses it (json_codec.h), and its message says
// which count it passed (the service's own message would name the inputs):
// parsed, a 32 MiB body of 8 million one-token inputs takes 19 s and 4 GB
// on an event-loop thread before the service refuses it.
TEST_F(ApiTest, ABodyOfMoreThanACallHoldsIsRefusedBeforeItIsParsed) {
  Start();
  const auto repeated = [](absl::string_view item, int count) {
    std::string text;
    for (int i = 0; i < count; ++i) {
      absl::StrAppend(&text, i == 0 ? "" : ",", item);
    }
    return text;
  };
  const std::pair<std::string, std::string> cases[] = {
      {"/v1/embeddings",
       absl::StrCat("{\"input\":[", repeated("[1]", 100000), "]}")},
      {"/v1/embeddings",
       absl::StrCat("{\"input\":[", repeated("\"a\"", 100000), "]}")},
      {"/v1/embeddings",
       absl::StrCat("{\"input\":[", repeated("1", 2000000), "]}")},
      {"/v1/favor/Embed",
       absl::StrCat("{\"inputs\":[", repeated("{}", 100000), "]}")},
      {"/v1/favor/Tokenize",
       absl::StrCat("{\"texts\":[", repeated("\"a\"", 100000), "]}")},
  };
  for (const auto& [route, body] : cases) {
    const auto error = ExpectError(testing::Post(port(), route, body), 400);
    EXPECT_THAT(error["message"].get<std::string>(),
                AllOf(HasSubstr("the request body has "),
                      HasSubstr("more than a call of at most 1024 inputs")))
        << route << " " << body.substr(0, 40);
  }
  ExpectStillServing();
}

TEST_F(ApiTest, PathsAndMethodsTheApiLacks) {
  Start();
  ExpectError(testing::Post(port(), "/v1/nothing", "{}"), 404);
  testing::FetchOptions get;
  get.target = "/v1/embeddings";
  auto refused = testing::Fetch(port(), get);
  ExpectError(refused, 405);
  EXPECT_EQ(refused->Header("Allow"), "POST");
  refused = testing::Post(port(), "/v1/models", "{}");
  ExpectError(refused, 405);
  EXPECT_EQ(refused->Header("Allow"), "GET, HEAD");
  // A compressed body is refused, not read as if it were JSON.
  for (const std::string encoding : {"gzip", "br"}) {
    testing::FetchOptions compressed;
    compressed.method = "POST";
    compressed.target = "/v1/embeddings";
    compressed.body = R"({"input":[[1]]})";
    compressed.headers = {{"Content-Encoding", encoding}};
    const auto error = ExpectError(testing::Fetch(port(), compressed), 415);
    EXPECT_THAT(error["message"].get<std::string>(), HasSubstr(encoding));
    compressed.headers = {{"Content-Encoding", "identity"}};
    auto got = testing::Fetch(port(), compressed);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->status, 200) << got->body;
  }
  // The route's name, not model_not_found: no model was asked for.
  const auto no_method =
      ExpectError(testing::Post(port(), "/v1/favor/NoSuchMethod", "{}"), 404);
  EXPECT_TRUE(no_method["code"].is_null()) << no_method;
  ExpectError(testing::Post(port(), "/v1/favor/NoSuchMethod", "{}"), 404);
  const auto error =
      ExpectError(testing::Post(port(), "/v1/favor/EmbedStream", "{}"), 501);
  EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("gRPC only"));
  ExpectStillServing();
}

// Header and path bytes that are not ASCII get JSON errors: an open server
// must not pass the Authorization header on as gRPC metadata, as gRPC aborts
// the process on a value that is not printable ASCII, and a path that is not
// UTF-8 must not get a 404 with an empty body (protobuf's JSON printer
// refuses a message quoting it).
TEST_F(ApiTest, HeaderAndPathBytesThatAreNotAsciiGetJsonErrors) {
  Start();
  testing::FetchOptions options;
  options.method = "POST";
  options.target = "/v1/embeddings";
  options.body = R"({"input":[[1]]})";
  options.headers = {{"Authorization", "Bearer \xff"}};
  const auto error = ExpectError(testing::Fetch(port(), options), 400);
  EXPECT_THAT(error["message"].get<std::string>(),
              HasSubstr("not printable ASCII"));
  const auto path = ExpectError(testing::Post(port(), "/v1/\xc1x", "{}"), 404);
  EXPECT_THAT(path["message"].get<std::string>(), HasSubstr("/v1/?x"));
  ExpectStillServing();
}

// HEAD is GET without the body (RFC 9110 9.3.2): load balancers probe with
// it. On one keep-alive connection, so that a body sent after a HEAD's
// header would be read as the next answer and fail it.
TEST_F(ApiTest, HeadIsGetWithoutTheBody) {
  Start();
  std::vector<testing::FetchOptions> requests(5);
  for (int i = 0; i < 5; ++i) {
    requests[i].method = i % 2 == 0 ? "HEAD" : "GET";
    requests[i].target = i < 2 ? "/health" : "/v1/models";
  }
  requests[4].method = "GET";
  requests[4].target = "/health";
  auto answers = testing::FetchInOrder(port(), requests);
  ASSERT_TRUE(answers.ok()) << answers.status();
  ASSERT_EQ(answers->size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ((*answers)[i].status, 200) << i;
  for (const int head : {0, 2}) {
    const testing::Fetched& got = (*answers)[head];
    const testing::Fetched& full = (*answers)[head + 1];
    EXPECT_EQ(got.body, "");
    ASSERT_FALSE(full.body.empty());
    EXPECT_EQ(got.Header("Content-Length"), std::to_string(full.body.size()));
    EXPECT_EQ(got.Header("Content-Type"), full.Header("Content-Type"));
  }
  // A HEAD to a POST route is refused like a GET, without the error's body.
  testing::FetchOptions head;
  head.method = "HEAD";
  head.target = "/v1/embeddings";
  const auto refused = testing::Fetch(port(), head);
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(refused->status, 405);
  EXPECT_EQ(refused->Header("Allow"), "POST");
  EXPECT_EQ(refused->body, "");
  EXPECT_NE(refused->Header("Content-Length"), "0");
  ExpectStillServing();
}

TEST_F(ApiTest, ModelsAndHealth) {
  Start();
  testing::FetchOptions options;
  options.target = "/v1/models";
  auto got = testing::Fetch(port(), options);
  ASSERT_TRUE(got.ok() && got->status == 200) << got.status();
  const auto models = nlohmann::json::parse(got->body);
  EXPECT_EQ(models["object"], "list");
  ASSERT_EQ(models["data"].size(), 1u);
  EXPECT_EQ(models["data"][0]["id"], "fake");
  EXPECT_EQ(models["data"][0]["object"], "model");
  options.target = "/v1/models/fake";
  got = testing::Fetch(port(), options);
  ASSERT_TRUE(got.ok() && got->status == 200) << got.status();
  EXPECT_EQ(nlohmann::json::parse(got->body), models["data"][0]);
  options.target = "/v1/models/nope";
  const auto missing = ExpectError(testing::Fetch(port(), options), 404);
  EXPECT_EQ(missing["code"], "model_not_found");
  // The name percent-decoded, as OpenAI's clients escape it ('k' is %6B).
  options.target = "/v1/models/fa%6Be";
  got = testing::Fetch(port(), options);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 200) << got->body;
  options.target = "/v1/models/no%20pe";
  const auto decoded = ExpectError(testing::Fetch(port(), options), 404);
  EXPECT_THAT(decoded["message"].get<std::string>(), HasSubstr("'no pe'"));
  for (const char* bad : {"/v1/models/fake%", "/v1/models/fake%6",
                          "/v1/models/%zzfake"}) {
    options.target = bad;
    const auto error = ExpectError(testing::Fetch(port(), options), 400);
    EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("'%'")) << bad;
  }
  // Decoded bytes that are not UTF-8 (they were a 501 with no message).
  options.target = "/v1/models/%ff";
  const auto not_utf8 = ExpectError(testing::Fetch(port(), options), 400);
  EXPECT_THAT(not_utf8["message"].get<std::string>(),
              HasSubstr("the model name is not valid UTF-8"));
  options.target = "/health";
  got = testing::Fetch(port(), options);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->status, 200);
  serving_.store(false);
  got = testing::Fetch(port(), options);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->status, 503);
}

TEST_F(ApiTest, FavorMethodsAnswerAsGrpcDoes) {
  Start();
  auto got = testing::Post(port(), "/v1/favor/GetModel", R"({"model":"fake"})");
  ASSERT_TRUE(got.ok() && got->status == 200) << got->body;
  v1::GetModelResponse from_json;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(got->body, &from_json).ok());
  grpc::ClientContext context;
  v1::GetModelResponse from_grpc;
  ASSERT_TRUE(
      stub_->GetModel(&context, v1::GetModelRequest(), &from_grpc).ok());
  EXPECT_TRUE(
      google::protobuf::util::MessageDifferencer::Equals(from_json, from_grpc));
  // An empty body is the empty request; field names are favor.proto's.
  got = testing::Post(port(), "/v1/favor/ListModels", "");
  ASSERT_TRUE(got.ok() && got->status == 200) << got->body;
  EXPECT_THAT(got->body, HasSubstr(R"("default_model":"fake")"));
  ExpectError(testing::Post(port(), "/v1/favor/Embed", R"({"inputs":7})"), 400);
  ExpectError(testing::Post(port(), "/v1/favor/GetModel", R"({"model":"x"})"),
              404);
}

TEST_F(ApiTest, AMissingOrWrongKeyIsRefusedBeforeTheBody) {
  ApiHandler::Options api;
  api.bearer_tokens = {"secret-token"};
  Start(service::FavorService::Options(), {}, api);
  const nlohmann::json error =
      ExpectError(PostEmbeddings(R"({"input":"a"})"), 401);
  EXPECT_EQ(error["code"], "invalid_api_key");
  testing::FetchOptions options;
  options.method = "POST";
  options.target = "/v1/embeddings";
  options.body = R"({"input":[[1]]})";
  options.headers = {{"Authorization", "Bearer wrong"}};
  ExpectError(testing::Fetch(port(), options), 401);
  options.headers = {{"Authorization", "Bearer secret-token"}};
  auto got = testing::Fetch(port(), options);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->status, 200) << got->body;
  options.target = "/v1/favor/ListModels";
  options.headers.clear();
  ExpectError(testing::Fetch(port(), options), 401);
  testing::FetchOptions health;  // needs no key
  health.target = "/health";
  got = testing::Fetch(port(), health);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->status, 200);
}

TEST_F(ApiTest, AFullQueueIs429WithRetryAfter) {
  service::FavorService::Options options;
  options.embed_batching.max_queue_requests = 1;
  options.embed_batching.max_batch_requests = 1;
  Start(options);
  model_.Hold();
  // While the model is held, at most 3 of 6 calls can be accepted (one in
  // the model, one batch ready for the worker, one queued), so at least 3
  // are refused at once. The model is released only after they are: a
  // loaded machine that delays a caller cannot turn a refusal into a
  // success.
  constexpr int kCalls = 6;
  std::vector<absl::StatusOr<testing::Fetched>> results(kCalls);
  std::atomic<int> refused_while_held{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < kCalls; ++i) {
    callers.emplace_back([&, i] {
      results[i] = PostEmbeddings(R"({"input":[[1]]})");
      if (results[i].ok() && results[i]->status == 429) ++refused_while_held;
    });
  }
  EXPECT_TRUE(service::WaitUntil([&] { return refused_while_held >= 3; }))
      << refused_while_held << " calls refused while the model was held";
  model_.Release();
  for (auto& caller : callers) caller.join();
  int refused = 0;
  for (const auto& result : results) {
    ASSERT_TRUE(result.ok()) << result.status();
    if (result->status == 200) continue;
    ++refused;
    const nlohmann::json error = ExpectError(result, 429);
    EXPECT_EQ(error["code"], "rate_limit_exceeded");
    EXPECT_GE(std::stoi(result->Header("Retry-After")), 1);
  }
  EXPECT_GE(refused, 3);
  ExpectStillServing();
}

// RESOURCE_EXHAUSTED without a retry hint is a request that can never run
// here (over the memory budget): 413, which OpenAI's clients do not retry,
// where a full queue's hint makes it 429 with Retry-After.
TEST(ApiErrorsTest, ResourceExhaustedIs429OnlyWithARetryHint) {
  const absl::Status status =
      absl::ResourceExhaustedError("it can never run here");
  const Response never = ErrorResponse(status);
  EXPECT_EQ(never.result_int(), 413);
  EXPECT_EQ(never[boost::beast::http::field::retry_after], "");
  const nlohmann::json error = nlohmann::json::parse(never.body())["error"];
  EXPECT_EQ(error["type"], "invalid_request_error");
  EXPECT_TRUE(error["code"].is_null());
  const Response later = ErrorResponse(status, 1500);
  EXPECT_EQ(later.result_int(), 429);
  EXPECT_EQ(later[boost::beast::http::field::retry_after], "2");
  EXPECT_EQ(nlohmann::json::parse(later.body())["error"]["code"],
            "rate_limit_exceeded");
}

TEST_F(ApiTest, XRequestTimeoutIsTheDeadline) {
  Start();
  model_.Hold();
  testing::FetchOptions options;
  options.method = "POST";
  options.target = "/v1/embeddings";
  options.body = R"({"input":[[1]]})";
  options.headers = {{"X-Request-Timeout", "0.2"}};
  const absl::Time start = absl::Now();
  ExpectError(testing::Fetch(port(), options), 504);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  model_.Release();
  options.headers = {{"X-Request-Timeout", "soon"}};
  ExpectError(testing::Fetch(port(), options), 400);
  options.headers = {{"X-Request-Timeout", "500ms"}};
  auto got = testing::Fetch(port(), options);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->status, 200) << got->body;
}

TEST_F(ApiTest, DrainingIs503) {
  Start();
  ExpectStillServing();
  service_->StartDraining();
  ExpectError(PostEmbeddings(R"({"input":[[1]]})"), 503);
}

TEST_F(ApiTest, AnswersAreCountedByRouteAndCode) {
  Start();
  ExpectStillServing();
  ExpectError(PostEmbeddings(R"({"input":""})"), 400);
  ExpectError(testing::Post(port(), "/v1/nothing", "{}"), 404);
  ASSERT_TRUE(testing::Post(port(), "/v1/favor/ListModels", "").ok());
  const std::string text = metrics_->SerializeText();
  const std::string total(metrics::kHttpRequestsTotal);
  using metrics::scrape::FindSample;
  EXPECT_EQ(
      FindSample(text, total, {{"route", "/v1/embeddings"}, {"code", "200"}}),
      1);
  EXPECT_EQ(
      FindSample(text, total, {{"route", "/v1/embeddings"}, {"code", "400"}}),
      1);
  EXPECT_EQ(FindSample(text, total, {{"route", "(other)"}, {"code", "404"}}),
            1);
  EXPECT_EQ(FindSample(text, total,
                       {{"route", "/v1/favor/ListModels"}, {"code", "200"}}),
            1);
  // The service counted the calls that reached it, as for gRPC.
  EXPECT_EQ(
      FindSample(text, std::string(metrics::kRequestsTotal),
                 {{"model", "fake"}, {"method", "Embed"}, {"code", "OK"}}),
      1);
}

}  // namespace
}  // namespace favor::http
