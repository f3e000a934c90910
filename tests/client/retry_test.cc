// Retries of favor::Client against small real gRPC servers written here
// (ScriptedServer): RESOURCE_EXHAUSTED with a `retry-after-ms` trailer a few
// times and then success, UNAVAILABLE with exponential backoff,
// INVALID_ARGUMENT never retried, retries bounded by attempts and by the
// deadline, and the same inside an EmbedStream (Status.retry_after_micros);
// health checks never retried.
// Also the retry policy itself (src/retry.h) as a pure function.
#include "retry.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "favor/client.h"
#include "favor/v1/favor.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace favor {
namespace {

// How ScriptedServer answers: `failures` calls (or stream messages, per
// request_id) fail with `code`, then they succeed; -1 means always fail.
struct Script {
  int failures = 0;
  grpc::StatusCode code = grpc::StatusCode::RESOURCE_EXHAUSTED;
  std::string message = "queue full";
  // The unary trailer `retry-after-ms`; negative: none.
  int retry_after_ms = -1;
  // Status.retry_after_micros of stream errors.
  int64_t retry_after_micros = 0;
};

// A server on an ephemeral loopback port; `add_service` registers what it
// serves with the builder.
template <typename AddService>
std::unique_ptr<grpc::Server> StartOnLoopback(AddService add_service,
                                              int* port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           port);
  add_service(builder);
  return builder.BuildAndStart();
}

// A Favor server that follows a Script and records when each call came.
class ScriptedServer final : public v1::Favor::Service {
 public:
  explicit ScriptedServer(Script script) : script_(std::move(script)) {
    server_ = StartOnLoopback(
        [this](grpc::ServerBuilder& builder) { builder.RegisterService(this); },
        &port_);
  }
  ~ScriptedServer() override { server_->Shutdown(); }

  std::string endpoint() const { return absl::StrCat("127.0.0.1:", port_); }

  std::vector<absl::Time> call_times() const {
    absl::MutexLock lock(&mu_);
    return call_times_;
  }

  grpc::Status Embed(grpc::ServerContext* context,
                     const v1::EmbedRequest* request,
                     v1::EmbedResponse* response) override {
    int call;
    {
      absl::MutexLock lock(&mu_);
      call_times_.push_back(absl::Now());
      call = static_cast<int>(call_times_.size());
    }
    if (script_.failures < 0 || call <= script_.failures) {
      if (script_.retry_after_ms >= 0) {
        context->AddTrailingMetadata("retry-after-ms",
                                     absl::StrCat(script_.retry_after_ms));
      }
      return grpc::Status(script_.code, script_.message);
    }
    Answer(*request, response);
    return grpc::Status::OK;
  }

  grpc::Status EmbedStream(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::EmbedStreamResponse, v1::EmbedStreamRequest>*
          stream) override {
    v1::EmbedStreamRequest request;
    std::map<std::string, int> attempts;
    while (stream->Read(&request)) {
      {
        absl::MutexLock lock(&mu_);
        call_times_.push_back(absl::Now());
      }
      v1::EmbedStreamResponse response;
      response.set_request_id(request.request_id());
      const int attempt = ++attempts[request.request_id()];
      if (script_.failures < 0 || attempt <= script_.failures) {
        v1::Status* error = response.mutable_error();
        error->set_code(static_cast<int>(script_.code));
        error->set_message(script_.message);
        error->set_retry_after_micros(script_.retry_after_micros);
      } else {
        Answer(request.request(), response.mutable_response());
      }
      stream->Write(response);
    }
    return grpc::Status::OK;
  }

 private:
  // One embedding per input: its first token id.
  static void Answer(const v1::EmbedRequest& request,
                     v1::EmbedResponse* response) {
    for (const v1::EmbedInput& input : request.inputs()) {
      response->add_embeddings()->add_values(
          static_cast<float>(input.token_ids(0)));
    }
    response->set_model("scripted");
  }

  const Script script_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  mutable absl::Mutex mu_;
  std::vector<absl::Time> call_times_ ABSL_GUARDED_BY(mu_);
};

// Retry options without jitter and with tiny backoff, so that only the
// server's hint can explain long waits.
ClientOptions FastRetries(const ScriptedServer& server) {
  ClientOptions options;
  options.endpoints = {server.endpoint()};
  options.default_timeout = absl::Seconds(20);
  options.retry.max_attempts = 5;
  options.retry.initial_backoff = absl::Milliseconds(1);
  options.retry.max_backoff = absl::Milliseconds(2);
  options.retry.jitter_fraction = 0;
  return options;
}

std::unique_ptr<Client> MakeClient(const ClientOptions& options) {
  return *Client::Create(options);
}

void ExpectGapsAtLeast(const std::vector<absl::Time>& times,
                       const std::vector<absl::Duration>& gaps) {
  ASSERT_EQ(times.size(), gaps.size() + 1);
  for (size_t i = 0; i < gaps.size(); ++i) {
    EXPECT_GE(times[i + 1] - times[i], gaps[i] - absl::Milliseconds(2))
        << "before attempt " << i + 2;
  }
}

TEST(ClientRetryTest, ResourceExhaustedIsRetriedAfterTheServersHint) {
  Script script;
  script.failures = 3;
  script.retry_after_ms = 150;
  ScriptedServer server(script);
  std::unique_ptr<Client> client = MakeClient(FastRetries(server));
  absl::StatusOr<EmbedResult> result = client->Embed({{7}});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->embeddings[0].values, std::vector<float>{7});
  ExpectGapsAtLeast(server.call_times(),
                    std::vector<absl::Duration>(3, absl::Milliseconds(150)));
}

TEST(ClientRetryTest, CallbackAndFutureFormsRetryToo) {
  Script script;
  script.failures = 2;
  script.retry_after_ms = 100;
  ScriptedServer server(script);
  std::unique_ptr<Client> client = MakeClient(FastRetries(server));
  absl::Notification done;
  absl::StatusOr<EmbedResult> result;
  client->EmbedAsync({{3}}, {}, {}, [&](absl::StatusOr<EmbedResult> r) {
    result = std::move(r);
    done.Notify();
  });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(20)));
  ASSERT_TRUE(result.ok()) << result.status();
  ExpectGapsAtLeast(server.call_times(),
                    std::vector<absl::Duration>(2, absl::Milliseconds(100)));
}

TEST(ClientRetryTest, HintIsIgnoredWhenNotHonoured) {
  Script script;
  script.failures = 2;
  script.retry_after_ms = 5000;
  ScriptedServer server(script);
  ClientOptions options = FastRetries(server);
  options.retry.honor_retry_hint = false;
  std::unique_ptr<Client> client = MakeClient(options);
  const absl::Time start = absl::Now();
  ASSERT_TRUE(client->Embed({{3}}).ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(4));
  EXPECT_EQ(server.call_times().size(), 3u);
}

TEST(ClientRetryTest, UnavailableIsRetriedWithExponentialBackoff) {
  Script script;
  script.failures = 3;
  script.code = grpc::StatusCode::UNAVAILABLE;
  script.message = "draining";
  ScriptedServer server(script);
  ClientOptions options = FastRetries(server);
  options.retry.initial_backoff = absl::Milliseconds(100);
  options.retry.max_backoff = absl::Seconds(1);
  options.retry.backoff_multiplier = 2;
  std::unique_ptr<Client> client = MakeClient(options);
  ASSERT_TRUE(client->Embed({{3}}).ok());
  ExpectGapsAtLeast(server.call_times(),
                    {absl::Milliseconds(100), absl::Milliseconds(200),
                     absl::Milliseconds(400)});
}

TEST(ClientRetryTest, InvalidArgumentIsNeverRetried) {
  Script script;
  script.failures = -1;
  script.code = grpc::StatusCode::INVALID_ARGUMENT;
  script.message = "inputs[0].token_ids[0] = 70000 is not below vocab_size 100";
  ScriptedServer server(script);
  std::unique_ptr<Client> client = MakeClient(FastRetries(server));
  absl::StatusOr<EmbedResult> result = client->Embed({{70000}});
  EXPECT_EQ(result.status(),
            absl::InvalidArgumentError(
                "inputs[0].token_ids[0] = 70000 is not below vocab_size 100"));
  EXPECT_EQ(server.call_times().size(), 1u);
  // Nor through the other forms.
  EXPECT_EQ(client->EmbedFuture({{70000}}).get().status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(server.call_times().size(), 2u);
}

TEST(ClientRetryTest, RetriesStopAfterMaxAttempts) {
  Script script;
  script.failures = -1;
  ScriptedServer server(script);
  ClientOptions options = FastRetries(server);
  options.retry.max_attempts = 3;
  std::unique_ptr<Client> client = MakeClient(options);
  absl::StatusOr<EmbedResult> result = client->Embed({{1}});
  EXPECT_EQ(result.status(), absl::ResourceExhaustedError("queue full"));
  EXPECT_EQ(server.call_times().size(), 3u);
}

TEST(ClientRetryTest, RetriesAreDisabledPerCode) {
  Script script;
  script.failures = -1;
  ScriptedServer server(script);
  ClientOptions options = FastRetries(server);
  options.retry.retry_on_resource_exhausted = false;
  std::unique_ptr<Client> client = MakeClient(options);
  EXPECT_EQ(client->Embed({{1}}).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(server.call_times().size(), 1u);
}

TEST(ClientRetryTest, MessageSizeErrorsAreNotRetried) {
  ScriptedServer server(Script{});
  ClientOptions options = FastRetries(server);
  options.max_message_size_bytes = 64;
  options.retry.initial_backoff = absl::Milliseconds(300);
  options.retry.max_backoff = absl::Milliseconds(300);
  std::unique_ptr<Client> client = MakeClient(options);
  const absl::Time start = absl::Now();
  absl::StatusOr<EmbedResult> result =
      client->Embed({TokenIds(100, 1)});  // about 200 bytes on the wire
  EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(result.status().message()),
              ::testing::HasSubstr("larger than max"));
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(250));  // no backoff
  EXPECT_TRUE(server.call_times().empty());
}

// favor-server's refusal of an input larger than its memory budget can
// ever hold (server/batching/batcher.cc): retrying cannot help.
TEST(ClientRetryTest, InputsThatCanNeverFitAreNotRetried) {
  Script script;
  script.failures = -1;
  script.message =
      "request of 262144 tokens needs an estimated 1432354816 bytes of "
      "memory on model 'default'; the server's memory budget "
      "(max_memory_bytes=961000000) leaves 700000000 bytes for batches "
      "beside 261000000 resident; it can never run here";
  ScriptedServer server(script);
  std::unique_ptr<Client> client = MakeClient(FastRetries(server));
  absl::StatusOr<EmbedResult> result = client->Embed({TokenIds(100, 1)});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(server.call_times().size(), 1u);
}

TEST(ClientRetryTest, AHintPastTheDeadlineEndsTheCallAtOnce) {
  Script script;
  script.failures = -1;
  script.retry_after_ms = 10000;
  ScriptedServer server(script);
  std::unique_ptr<Client> client = MakeClient(FastRetries(server));
  CallOptions call;
  call.timeout = absl::Milliseconds(500);
  const absl::Time start = absl::Now();
  EXPECT_EQ(client->Embed({{1}}, {}, call).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(400));
  EXPECT_EQ(server.call_times().size(), 1u);
}

TEST(ClientRetryTest, BackoffStaysInsideTheDeadline) {
  Script script;
  script.failures = -1;
  script.code = grpc::StatusCode::UNAVAILABLE;
  ScriptedServer server(script);
  ClientOptions options = FastRetries(server);
  options.retry.max_attempts = 100;
  options.retry.initial_backoff = absl::Milliseconds(100);
  options.retry.max_backoff = absl::Seconds(10);
  std::unique_ptr<Client> client = MakeClient(options);
  CallOptions call;
  call.timeout = absl::Milliseconds(650);
  const absl::Time start = absl::Now();
  EXPECT_EQ(client->Embed({{1}}, {}, call).status().code(),
            absl::StatusCode::kUnavailable);
  // Attempts at 0, 100 and 300 ms; the next would start at 700 ms.
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(650));
  EXPECT_EQ(server.call_times().size(), 3u);
}

TEST(ClientRetryTest, StreamMessagesAreRetriedAfterTheServersHint) {
  Script script;
  script.failures = 1;
  script.retry_after_micros = 200000;
  ScriptedServer server(script);
  std::unique_ptr<Client> client = MakeClient(FastRetries(server));
  std::unique_ptr<EmbedStreamer> streamer = *client->OpenEmbedStream();
  const absl::Time start = absl::Now();
  for (uint32_t i = 1; i <= 5; ++i) ASSERT_TRUE(streamer->Send({{i}}).ok());
  streamer->CloseSend();
  int answered = 0;
  while (std::optional<StreamedEmbedResult> answer = streamer->Next()) {
    ASSERT_TRUE(answer->result.ok()) << answer->result.status();
    EXPECT_EQ(answer->result->embeddings[0].values,
              std::vector<float>{static_cast<float>(answer->id + 1)});
    EXPECT_EQ(answer->attempts, 2);
    EXPECT_GE(absl::Now() - start, absl::Milliseconds(198));
    ++answered;
  }
  EXPECT_EQ(answered, 5);
  EXPECT_TRUE(streamer->Finish().ok());
  EXPECT_EQ(server.call_times().size(), 10u);
}

TEST(ClientRetryTest, ManyStreamRetriesInFlightAllComeBack) {
  Script script;
  script.failures = 1;
  script.retry_after_micros = 10000;
  ScriptedServer server(script);
  std::unique_ptr<Client> client = MakeClient(FastRetries(server));
  EmbedStreamOptions options;
  options.max_in_flight = 16;
  std::unique_ptr<EmbedStreamer> streamer = *client->OpenEmbedStream(options);
  std::set<uint64_t> ids;
  std::thread reader([&] {
    while (std::optional<StreamedEmbedResult> answer = streamer->Next()) {
      EXPECT_TRUE(answer->result.ok()) << answer->result.status();
      EXPECT_EQ(answer->attempts, 2);
      ids.insert(answer->id);
    }
  });
  for (uint32_t i = 1; i <= 200; ++i) ASSERT_TRUE(streamer->Send({{i}}).ok());
  streamer->CloseSend();
  reader.join();
  EXPECT_TRUE(streamer->Finish().ok());
  EXPECT_EQ(ids.size(), 200u);
  EXPECT_EQ(server.call_times().size(), 400u);
}

TEST(ClientRetryTest, StreamInvalidArgumentIsNotRetried) {
  Script script;
  script.failures = -1;
  script.code = grpc::StatusCode::INVALID_ARGUMENT;
  script.message = "inputs is empty";
  ScriptedServer server(script);
  std::unique_ptr<Client> client = MakeClient(FastRetries(server));
  std::unique_ptr<EmbedStreamer> streamer = *client->OpenEmbedStream();
  ASSERT_TRUE(streamer->Send({{1}}).ok());
  std::optional<StreamedEmbedResult> answer = streamer->Next();
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->result.status(),
            absl::InvalidArgumentError("inputs is empty"));
  EXPECT_EQ(answer->attempts, 1);
  EXPECT_TRUE(streamer->Finish().ok());
  EXPECT_EQ(server.call_times().size(), 1u);
}

// A server whose every method answers UNAVAILABLE ("draining"), counting
// the calls by method: it serves no registered service, so its generic
// service gets them all, grpc.health.v1.Health/Check included.
class DrainingServer final : public grpc::CallbackGenericService {
 public:
  DrainingServer() {
    server_ = StartOnLoopback(
        [this](grpc::ServerBuilder& builder) {
          builder.RegisterCallbackGenericService(this);
        },
        &port_);
  }
  ~DrainingServer() override { server_->Shutdown(); }

  std::string endpoint() const { return absl::StrCat("127.0.0.1:", port_); }

  int calls(const std::string& method) const {
    absl::MutexLock lock(&mu_);
    const auto found = calls_.find(method);
    return found == calls_.end() ? 0 : found->second;
  }

  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext* context) override {
    {
      absl::MutexLock lock(&mu_);
      ++calls_[context->method()];
    }
    class Refusal final : public grpc::ServerGenericBidiReactor {
     public:
      Refusal() {
        Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "draining"));
      }
      void OnDone() override { delete this; }
    };
    return new Refusal;
  }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  mutable absl::Mutex mu_;
  std::map<std::string, int> calls_ ABSL_GUARDED_BY(mu_);
};

TEST(ClientRetryTest, HealthChecksAreNeverRetried) {
  DrainingServer server;
  ClientOptions options;
  options.endpoints = {server.endpoint()};
  options.retry.max_attempts = 3;
  options.retry.initial_backoff = absl::Milliseconds(1);
  options.retry.max_backoff = absl::Milliseconds(2);
  std::unique_ptr<Client> client = MakeClient(options);
  EXPECT_EQ(client->CheckHealth().status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(server.calls("/grpc.health.v1.Health/Check"), 1);
  // The same refusal of a Favor call is retried.
  EXPECT_EQ(client->ListModels().status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(server.calls("/favor.v1.Favor/ListModels"), 3);
}

// --- The policy as a function ---------------------------------------------

TEST(RetryDelayTest, GrowsExponentiallyUpToTheCap) {
  RetryOptions options;
  options.initial_backoff = absl::Milliseconds(10);
  options.max_backoff = absl::Milliseconds(50);
  options.backoff_multiplier = 3;
  options.jitter_fraction = 0;
  options.max_attempts = 10;
  client_internal::Jitter jitter;
  const absl::Time now = absl::Now();
  std::vector<absl::Duration> delays;
  for (int attempts = 1; attempts <= 4; ++attempts) {
    delays.push_back(*client_internal::RetryDelay(
        options, attempts, absl::UnavailableError("x"), std::nullopt, now,
        absl::InfiniteFuture(), jitter));
  }
  EXPECT_THAT(delays, ::testing::ElementsAre(
                          absl::Milliseconds(10), absl::Milliseconds(30),
                          absl::Milliseconds(50), absl::Milliseconds(50)));
}

TEST(RetryDelayTest, JitterStaysInItsRangeAndVaries) {
  RetryOptions options;
  options.initial_backoff = absl::Milliseconds(100);
  options.jitter_fraction = 0.5;
  client_internal::Jitter jitter;
  std::set<absl::Duration> seen;
  for (int i = 0; i < 200; ++i) {
    const absl::Duration delay = *client_internal::RetryDelay(
        options, 1, absl::ResourceExhaustedError("x"), std::nullopt,
        absl::Now(), absl::InfiniteFuture(), jitter);
    EXPECT_GE(delay, absl::Milliseconds(50));
    EXPECT_LE(delay, absl::Milliseconds(150));
    seen.insert(delay);
  }
  EXPECT_GT(seen.size(), 100u);
}

TEST(RetryDelayTest, HintIsAFloorAndTheDeadlineABound) {
  RetryOptions options;
  options.jitter_fraction = 0;
  client_internal::Jitter jitter;
  const absl::Time now = absl::Now();
  EXPECT_EQ(client_internal::RetryDelay(
                options, 1, absl::ResourceExhaustedError("x"), absl::Seconds(7),
                now, absl::InfiniteFuture(), jitter),
            absl::Seconds(7));  // above max_backoff: the hint still wins
  EXPECT_EQ(client_internal::RetryDelay(
                options, 1, absl::ResourceExhaustedError("x"), absl::Seconds(7),
                now, now + absl::Seconds(6), jitter),
            std::nullopt);
  EXPECT_EQ(client_internal::RetryDelay(
                options, 1, absl::InvalidArgumentError("x"), std::nullopt, now,
                absl::InfiniteFuture(), jitter),
            std::nullopt);
  EXPECT_EQ(client_internal::RetryDelay(options, 5, absl::UnavailableError("x"),
                                        std::nullopt, now,
                                        absl::InfiniteFuture(), jitter),
            std::nullopt);  // max_attempts (5) used up
}

}  // namespace
}  // namespace favor
