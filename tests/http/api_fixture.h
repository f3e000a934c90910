// The fixture of the HTTP API tests: a FavorService over one FakeModel
// ("fake", with the twelve-word tokenizer of tests/service/test_server.h)
// behind a real gRPC server on loopback, and the HTTP API in front of its
// in-process channel, as favor-server wires them.
#ifndef FAVOR_TESTS_HTTP_API_FIXTURE_H_
#define FAVOR_TESTS_HTTP_API_FIXTURE_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "favor/v1/favor.grpc.pb.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/http/api_handler.h"
#include "server/http/http_server.h"
#include "server/metrics/metrics.h"
#include "server/service/favor_service.h"
#include "tests/http/http_client.h"
#include "tests/service/test_server.h"

namespace favor::http {

// gRPC 1.51 runs client callbacks on one process-wide completion queue when
// its I/O manager has no background poller; the queue is shut down when the
// last channel that used it goes, and started again by the next, and that
// restart races with the old queue's threads (an abort in
// grpc_cq_internal_unref). Each test here makes and drops an in-process
// channel, so one channel that has made a callback call is kept for the
// whole test process: the queue then lives as long as the process.
// (favor-server makes one channel and keeps it until exit.)
inline void KeepCallbackQueueAlive() {
  static const bool kept = [] {
    auto* channel = new std::shared_ptr<grpc::Channel>(
        grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials()));
    grpc::GenericStub stub(*channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::milliseconds(1));
    grpc::Slice empty("");
    grpc::ByteBuffer request(&empty, 1);
    grpc::ByteBuffer response;
    absl::Notification done;
    stub.UnaryCall(&context, "/keep.Alive/Call", grpc::StubOptions(), &request,
                   &response, [&done](grpc::Status) { done.Notify(); });
    done.WaitForNotification();
    return true;
  }();
  (void)kept;
}

class ApiTest : public ::testing::Test {
 protected:
  // The FakeModel takes sequences of up to `max_sequence_length` tokens.
  explicit ApiTest(int64_t max_sequence_length = 64)
      : model_("fake", 100, max_sequence_length) {
    model_.set_tokenizer(service::testing::SmallVocabTokenizer());
  }
  ~ApiTest() override {
    model_.Release();
    if (service_ != nullptr) service_->Shutdown(absl::ZeroDuration());
    if (grpc_ != nullptr) {
      grpc_->Shutdown();
      grpc_->Wait();
    }
    if (http_ != nullptr) http_->Shutdown(absl::Seconds(5));
  }

  // With every option at its default. A named object, not a defaulted
  // argument: GCC 12 warns (wrongly) that a braced temporary's strings may
  // be used uninitialised.
  void Start() {
    service::FavorService::Options service_options;
    Start(std::move(service_options));
  }

  // Starts everything; `tokens` go to the service and the HTTP edge alike.
  void Start(service::FavorService::Options service_options,
             HttpServer::Options http_options = {},
             ApiHandler::Options api_options = {}) {
    KeepCallbackQueueAlive();
    service_options.bearer_tokens = api_options.bearer_tokens;
    auto metrics = metrics::Metrics::Create(MetricsOptions());
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    metrics_ = *std::move(metrics);
    auto service = service::FavorService::Create(service_options, {&model_},
                                                 metrics_.get());
    ASSERT_TRUE(service.ok()) << service.status();
    service_ = *std::move(service);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &grpc_port_);
    builder.RegisterService(service_.get());
    grpc_ = builder.BuildAndStart();
    ASSERT_NE(grpc_, nullptr);
    stub_ = v1::Favor::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", grpc_port_),
                            grpc::InsecureChannelCredentials()));
    api_options.in_process_key = service_->in_process_key();
    handler_ = std::make_unique<ApiHandler>(
        api_options, grpc_->InProcessChannel(grpc::ChannelArguments()),
        [this] { return serving_.load(); }, metrics_.get());
    http_options.port = 0;
    auto http = HttpServer::Create(http_options, handler_.get());
    ASSERT_TRUE(http.ok()) << http.status();
    http_ = *std::move(http);
  }

  static metrics::Metrics::Options MetricsOptions() {
    metrics::Metrics::Options options;
    options.serve_http = false;
    options.models = {"fake"};
    return options;
  }

  int port() const { return http_->port(); }

  absl::StatusOr<testing::Fetched> PostEmbeddings(const std::string& body) {
    return testing::Post(port(), "/v1/embeddings", body);
  }

  // Asserts an OpenAI-shaped error with `status` and returns its "error".
  static nlohmann::json ExpectError(const absl::StatusOr<testing::Fetched>& got,
                                    int status) {
    EXPECT_TRUE(got.ok()) << got.status();
    if (!got.ok()) return {};
    EXPECT_EQ(got->status, status) << got->body;
    EXPECT_EQ(got->Header("Content-Type"), "application/json");
    const nlohmann::json body =
        nlohmann::json::parse(got->body, nullptr, false);
    EXPECT_TRUE(body.is_object() && body.contains("error")) << got->body;
    if (!body.is_object() || !body.contains("error")) return {};
    const nlohmann::json& error = body["error"];
    EXPECT_TRUE(error["message"].is_string() && error["type"].is_string() &&
                error.contains("param") && error.contains("code"))
        << got->body;
    return error;
  }

  // The server still answers a good request.
  void ExpectStillServing() {
    auto got = PostEmbeddings(R"({"input":[[1,2,3]]})");
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->status, 200) << got->body;
  }

  service::testing::FakeModel model_;
  std::unique_ptr<metrics::Metrics> metrics_;
  std::unique_ptr<service::FavorService> service_;
  std::unique_ptr<grpc::Server> grpc_;
  int grpc_port_ = 0;
  std::unique_ptr<v1::Favor::Stub> stub_;
  std::atomic<bool> serving_{true};
  std::unique_ptr<ApiHandler> handler_;
  std::unique_ptr<HttpServer> http_;
};

}  // namespace favor::http

#endif  // FAVOR_TESTS_HTTP_API_FIXTURE_H_
