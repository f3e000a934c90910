// Every status the service can answer, through every transport, from one
// table: the gRPC code, message and `retry-after-ms` trailer a raw stub
// sees; the code, message and retry_after_micros of a refused EmbedStream
// message; the HTTP status, OpenAI `error.type` and `error.code`, and
// Retry-After of /v1/embeddings and /v1/favor/Embed; and whether favor's
// client library retries it, for Embed and per message of its EmbedStreamer.
// A scripted Favor server answers each row's status through the service's
// own mappings (service::ToGrpcStatus, service::ToStreamError), the
// HTTP API stands in front of it as favor-server wires it (ApiHandler on a
// channel to the service), and the client calls it directly.
//
// The expected values are this file's own, written from design.md's table
// and OpenAI's error types, not read from the product's mapping; every
// gRPC code has a row, so a new code cannot be left out.
#include <atomic>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "favor/client.h"
#include "favor/v1/favor.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/batching/retry_hint.h"
#include "server/http/api_handler.h"
#include "server/http/http_server.h"
#include "server/service/status_mapping.h"
#include "tests/http/api_fixture.h"
#include "tests/http/http_client.h"

namespace favor::http {
namespace {

struct Row {
  absl::StatusCode code;
  // The service's message (the never-fits ones are the service's own).
  std::string message;
  // A retry hint (batching::ResourceExhaustedWithRetry) in milliseconds.
  std::optional<int> hint_ms;
  int http_status;
  std::string openai_type;
  // OpenAI's error.code; empty: null.
  std::string openai_code;
  // Retry-After (HTTP) in seconds; empty: none.
  std::string retry_after;
  // Whether favor::Client tries again.
  bool client_retries;
};

// The service's own RESOURCE_EXHAUSTED messages without a hint (a request
// that can never run here), word for word.
constexpr char kNeverFitsBudget[] =
    "request of 5000 tokens needs an estimated 2147483648 bytes of memory on "
    "model 'fake'; the server's memory budget (max_memory_bytes=1073741824) "
    "leaves 536870912 bytes for batches beside 536870912 resident; it can "
    "never run here";
constexpr char kNeverQueuedTogether[] =
    "the call's 9 inputs (windows counted) of 90 tokens can never be queued "
    "together for model 'fake' (max_queue_requests=8, max_queue_tokens=80): "
    "send fewer or shorter inputs per call; as sent, it can never run here";
constexpr char kAnswerOverMessageLimit[] =
    "the answer would take up to 9000 bytes, over the 4096 a message may "
    "have (--max_message_bytes): ask for fewer tokens a call, token "
    "embeddings in bfloat16 or float16, or spans instead of token "
    "embeddings; as asked, it can never run here";

const std::vector<Row>& Table() {
  using C = absl::StatusCode;
  static const auto* table = new std::vector<Row>{
      {C::kCancelled, "client cancelled", {}, 499, "invalid_request_error", "",
       "", false},
      {C::kUnknown, "unknown", {}, 500, "server_error", "", "", false},
      {C::kInvalidArgument, "inputs is empty", {}, 400,
       "invalid_request_error", "", "", false},
      {C::kDeadlineExceeded, "deadline passed while queued", {}, 504,
       "server_error", "", "", false},
      {C::kNotFound, "no model 'x'", {}, 404, "invalid_request_error",
       "model_not_found", "", false},
      {C::kAlreadyExists, "exists", {}, 409, "invalid_request_error", "", "",
       false},
      {C::kPermissionDenied, "denied", {}, 403, "invalid_request_error", "",
       "", false},
      // A full queue: retried, after the hint (1.5 s: 2 s whole seconds).
      {C::kResourceExhausted, "queue of model 'fake' is full", 1500, 429,
       "rate_limit_error", "rate_limit_exceeded", "2", true},
      {C::kResourceExhausted, "queue of model 'fake' is full", 1, 429,
       "rate_limit_error", "rate_limit_exceeded", "1", true},
      // Never fits: 413, and no client tries again.
      {C::kResourceExhausted, kNeverFitsBudget, {}, 413,
       "invalid_request_error", "", "", false},
      {C::kResourceExhausted, kNeverQueuedTogether, {}, 413,
       "invalid_request_error", "", "", false},
      {C::kResourceExhausted, kAnswerOverMessageLimit, {}, 413,
       "invalid_request_error", "", "", false},
      {C::kFailedPrecondition, "model 'fake' has no tokenizer", {}, 400,
       "invalid_request_error", "", "", false},
      {C::kAborted, "aborted", {}, 409, "invalid_request_error", "", "", false},
      {C::kOutOfRange, "out of range", {}, 400, "invalid_request_error", "",
       "", false},
      {C::kUnimplemented, "unimplemented", {}, 501, "server_error", "", "",
       false},
      {C::kInternal, "compute failed", {}, 500, "server_error", "", "", false},
      // Draining or not ready: retried, with the client's own backoff.
      {C::kUnavailable, "draining for shutdown", {}, 503, "server_error", "",
       "", true},
      {C::kDataLoss, "data loss", {}, 500, "server_error", "", "", false},
      {C::kUnauthenticated, "missing bearer token", {}, 401,
       "authentication_error", "invalid_api_key", "", false},
  };
  return *table;
}

std::string Name(const Row& row) {
  return absl::StrCat(absl::StatusCodeToString(row.code),
                      row.hint_ms ? absl::StrCat(" hint ", *row.hint_ms) : "",
                      " \"", row.message.substr(0, 40), "\"");
}

absl::Status StatusOf(const Row& row) {
  if (row.hint_ms.has_value()) {
    // The batcher's own hinted status; its message gains "; retry after".
    return batching::ResourceExhaustedWithRetry(
        row.message, absl::Milliseconds(*row.hint_ms));
  }
  return absl::Status(row.code, row.message);
}

// A Favor server whose Embed answers one row's status, mapped as the
// service maps it, and counts the calls.
class RowServer final : public v1::Favor::Service {
 public:
  grpc::Status Embed(grpc::ServerContext* context, const v1::EmbedRequest*,
                     v1::EmbedResponse*) override {
    calls_.fetch_add(1);
    absl::MutexLock lock(&mu_);
    return service::ToGrpcStatus(StatusOf(*row_), context);
  }
  // Each message of the stream answered with the row's status, as the
  // service answers a refused message (service::ToStreamError).
  grpc::Status EmbedStream(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::EmbedStreamResponse,
                               v1::EmbedStreamRequest>* stream) override {
    v1::EmbedStreamRequest request;
    while (stream->Read(&request)) {
      calls_.fetch_add(1);
      v1::EmbedStreamResponse response;
      response.set_request_id(request.request_id());
      {
        absl::MutexLock lock(&mu_);
        service::ToStreamError(StatusOf(*row_), response.mutable_error());
      }
      if (!stream->Write(response)) break;
    }
    return grpc::Status::OK;
  }
  void Answer(const Row& row) {
    absl::MutexLock lock(&mu_);
    row_ = &row;
    calls_.store(0);
  }
  int calls() const { return calls_.load(); }

 private:
  absl::Mutex mu_;
  const Row* row_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::atomic<int> calls_{0};
};

class StatusTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KeepCallbackQueueAlive();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &grpc_port_);
    builder.RegisterService(&server_);
    grpc_ = builder.BuildAndStart();
    ASSERT_NE(grpc_, nullptr);
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", grpc_port_),
                                   grpc::InsecureChannelCredentials());
    stub_ = v1::Favor::NewStub(channel_);
    handler_ = std::make_unique<ApiHandler>(
        ApiHandler::Options(), grpc_->InProcessChannel(grpc::ChannelArguments()),
        [] { return true; });
    HttpServer::Options http_options;
    http_options.port = 0;
    auto http = HttpServer::Create(http_options, handler_.get());
    ASSERT_TRUE(http.ok()) << http.status();
    http_ = *std::move(http);
  }
  void TearDown() override {
    if (http_ != nullptr) http_->Shutdown(absl::Seconds(5));
    grpc_->Shutdown();
    grpc_->Wait();
  }

  // favor::Client on the scripted server: three attempts, 1-2 ms apart.
  ClientOptions RetryingClientOptions() const {
    ClientOptions options;
    options.endpoints = {absl::StrCat("127.0.0.1:", grpc_port_)};
    options.default_timeout = absl::Seconds(20);
    options.retry.max_attempts = 3;
    options.retry.initial_backoff = absl::Milliseconds(1);
    options.retry.max_backoff = absl::Milliseconds(2);
    options.retry.jitter_fraction = 0;
    return options;
  }

  RowServer server_;
  int grpc_port_ = 0;
  std::unique_ptr<grpc::Server> grpc_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Favor::Stub> stub_;
  std::unique_ptr<ApiHandler> handler_;
  std::unique_ptr<HttpServer> http_;
};

TEST(StatusTable, HasARowForEveryCode) {
  std::set<absl::StatusCode> covered;
  for (const Row& row : Table()) covered.insert(row.code);
  for (int code = 1; code <= 16; ++code) {
    EXPECT_TRUE(covered.count(static_cast<absl::StatusCode>(code)))
        << absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
  }
}

TEST_F(StatusTableTest, GrpcSeesTheCodeTheMessageAndTheHint) {
  for (const Row& row : Table()) {
    SCOPED_TRACE(Name(row));
    server_.Answer(row);
    grpc::ClientContext context;
    v1::EmbedRequest request;
    request.add_inputs()->add_token_ids(1);
    v1::EmbedResponse response;
    const grpc::Status status = stub_->Embed(&context, request, &response);
    EXPECT_EQ(static_cast<int>(status.error_code()),
              static_cast<int>(row.code));
    EXPECT_TRUE(absl::StartsWith(status.error_message(), row.message))
        << status.error_message();
    const auto& trailers = context.GetServerTrailingMetadata();
    const auto hint = trailers.find("retry-after-ms");
    if (row.hint_ms.has_value()) {
      ASSERT_NE(hint, trailers.end());
      EXPECT_EQ(std::string(hint->second.data(), hint->second.size()),
                absl::StrCat(*row.hint_ms));
      EXPECT_TRUE(absl::StrContains(status.error_message(), "retry after"));
    } else {
      EXPECT_EQ(hint, trailers.end());
    }
  }
}

TEST_F(StatusTableTest, StreamMessagesSeeTheCodeTheMessageAndTheHint) {
  grpc::ClientContext context;
  auto stream = stub_->EmbedStream(&context);
  int n = 0;
  for (const Row& row : Table()) {
    SCOPED_TRACE(Name(row));
    server_.Answer(row);
    v1::EmbedStreamRequest request;
    request.set_request_id(absl::StrCat("row-", n++));
    request.mutable_request()->add_inputs()->add_token_ids(1);
    ASSERT_TRUE(stream->Write(request));
    v1::EmbedStreamResponse response;
    ASSERT_TRUE(stream->Read(&response));
    EXPECT_EQ(response.request_id(), request.request_id());
    ASSERT_TRUE(response.has_error());
    EXPECT_EQ(response.error().code(), static_cast<int>(row.code));
    EXPECT_TRUE(absl::StartsWith(response.error().message(), row.message))
        << response.error().message();
    // The hint in microseconds, exactly; none without one.
    EXPECT_EQ(response.error().retry_after_micros(),
              row.hint_ms.has_value() ? int64_t{*row.hint_ms} * 1000 : 0);
  }
  // Every message refused, the stream itself ends well.
  stream->WritesDone();
  const grpc::Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(StatusTableTest, HttpAnswersTheStatusTypeCodeAndRetryAfter) {
  for (const Row& row : Table()) {
    for (const char* target : {"/v1/embeddings", "/v1/favor/Embed"}) {
      SCOPED_TRACE(absl::StrCat(Name(row), " ", target));
      server_.Answer(row);
      const std::string body = absl::string_view(target) == "/v1/embeddings"
                                   ? R"({"input":[[1,2]]})"
                                   : R"({"inputs":[{"tokenIds":[1,2]}]})";
      auto got = testing::Post(http_->port(), target, body);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(server_.calls(), 1);
      EXPECT_EQ(got->status, row.http_status) << got->body;
      EXPECT_EQ(got->Header("Retry-After"), row.retry_after);
      EXPECT_EQ(got->Header("WWW-Authenticate"),
                row.http_status == 401 ? "Bearer" : "");
      const nlohmann::json json = nlohmann::json::parse(got->body, nullptr,
                                                        false);
      ASSERT_TRUE(json.is_object() && json.contains("error")) << got->body;
      const nlohmann::json& error = json["error"];
      EXPECT_EQ(error.value("type", ""), row.openai_type);
      if (row.openai_code.empty()) {
        EXPECT_TRUE(error["code"].is_null()) << got->body;
      } else {
        EXPECT_EQ(error["code"], row.openai_code) << got->body;
      }
      EXPECT_TRUE(error["param"].is_null()) << got->body;
      EXPECT_TRUE(absl::StartsWith(error.value("message", ""), row.message))
          << got->body;
    }
  }
}

TEST_F(StatusTableTest, TheClientRetriesExactlyTheRetryableRows) {
  auto client = Client::Create(RetryingClientOptions());
  ASSERT_TRUE(client.ok()) << client.status();
  for (const Row& row : Table()) {
    SCOPED_TRACE(Name(row));
    server_.Answer(row);
    absl::StatusOr<EmbedResult> result = (*client)->Embed({{1, 2}});
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), row.code) << result.status();
    EXPECT_EQ(server_.calls(), row.client_retries ? 3 : 1);
  }
}

TEST_F(StatusTableTest, TheStreamerRetriesExactlyTheRetryableRows) {
  auto client = Client::Create(RetryingClientOptions());
  ASSERT_TRUE(client.ok()) << client.status();
  for (const Row& row : Table()) {
    SCOPED_TRACE(Name(row));
    server_.Answer(row);
    auto streamer = (*client)->OpenEmbedStream();
    ASSERT_TRUE(streamer.ok()) << streamer.status();
    ASSERT_TRUE((*streamer)->Send({TokenIds{1, 2}}).ok());
    std::optional<StreamedEmbedResult> answer = (*streamer)->Next();
    ASSERT_TRUE(answer.has_value());
    ASSERT_FALSE(answer->result.ok());
    EXPECT_EQ(answer->result.status().code(), row.code)
        << answer->result.status();
    EXPECT_EQ(answer->attempts, row.client_retries ? 3 : 1);
    EXPECT_EQ((*streamer)->Finish(), absl::OkStatus());
    // The server saw each attempt: no retry is left in flight.
    EXPECT_EQ(server_.calls(), row.client_retries ? 3 : 1);
  }
}

}  // namespace
}  // namespace favor::http
