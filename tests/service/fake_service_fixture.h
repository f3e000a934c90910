// The fixture of the service tests over real gRPC on loopback: a
// FavorService with one FakeModel ("fake"), small call limits, and helpers
// to build and send Embed and Attend calls and to wait for the service's
// state.
#ifndef FAVOR_TESTS_SERVICE_FAKE_SERVICE_FIXTURE_H_
#define FAVOR_TESTS_SERVICE_FAKE_SERVICE_FIXTURE_H_

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "favor/v1/favor.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server/service/favor_service.h"
#include "server/service/status_mapping.h"
#include "tests/service/test_server.h"

namespace favor::service {

inline v1::EmbedRequest EmbedOf(
    const std::vector<std::vector<uint32_t>>& inputs) {
  v1::EmbedRequest request;
  for (const auto& ids : inputs) {
    request.add_inputs()->mutable_token_ids()->Add(ids.begin(), ids.end());
  }
  return request;
}

inline grpc::Status CallEmbed(v1::Favor::Stub& stub,
                              const v1::EmbedRequest& request,
                              v1::EmbedResponse* response = nullptr,
                              absl::Duration timeout = absl::Seconds(30)) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       absl::ToChronoMilliseconds(timeout));
  v1::EmbedResponse ignored;
  return stub.Embed(&context, request, response ? response : &ignored);
}

inline v1::Tensor TensorOf(std::vector<int64_t> shape,
                           const std::vector<float>& v) {
  v1::Tensor tensor;
  tensor.mutable_shape()->Add(shape.begin(), shape.end());
  tensor.set_dtype(v1::DTYPE_FLOAT32);
  tensor.set_data(std::string(reinterpret_cast<const char*>(v.data()),
                              v.size() * sizeof(float)));
  return tensor;
}

inline std::vector<float> FloatsOf(const v1::Tensor& tensor) {
  std::vector<float> values(tensor.data().size() / sizeof(float));
  std::memcpy(values.data(), tensor.data().data(), tensor.data().size());
  return values;
}

// Q = K = 0 (every key weighs the same), V (1, 1, 4, 2) with rows 0..3.
inline v1::AttendRequest UniformAttend(absl::string_view kernel) {
  v1::AttendRequest request;
  *request.mutable_query() = TensorOf({1, 1, 4, 2}, std::vector<float>(8, 0));
  *request.mutable_key() = TensorOf({1, 1, 4, 2}, std::vector<float>(8, 0));
  *request.mutable_value() =
      TensorOf({1, 1, 4, 2}, {0, 0, 1, 10, 2, 20, 3, 30});
  request.set_kernel(std::string(kernel));
  request.set_num_random_features(8);
  return request;
}

// As CallEmbed, keeping the retry hint trailer (empty when none).
inline grpc::Status CallEmbedWithRetryHint(v1::Favor::Stub& stub,
                                           const v1::EmbedRequest& request,
                                           std::string* retry_after_ms) {
  grpc::ClientContext context;
  v1::EmbedResponse response;
  const grpc::Status status = stub.Embed(&context, request, &response);
  for (const auto& [key, value] : context.GetServerTrailingMetadata()) {
    if (absl::string_view(key.data(), key.size()) == kRetryAfterMsTrailer) {
      *retry_after_ms = std::string(value.data(), value.size());
    }
  }
  return status;
}

// Polls `condition` every millisecond until it holds (true) or `timeout`
// passes (false): for states the service exposes but announces to no one,
// such as its number of open calls.
inline bool WaitUntil(const std::function<bool()>& condition,
                      absl::Duration timeout = absl::Seconds(30)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

inline grpc::Status CallAttend(v1::Favor::Stub& stub,
                               const v1::AttendRequest& request,
                               v1::AttendResponse* response = nullptr) {
  grpc::ClientContext context;
  v1::AttendResponse ignored;
  return stub.Attend(&context, request, response ? response : &ignored);
}

// Each test calls Start() with the options it needs; max_inputs_per_call is
// 4 and max_tokens_per_call 100 whatever they say.
class FakeServiceTest : public ::testing::Test {
 protected:
  FakeServiceTest() : model_("fake") {}

  void Start() { Start(FavorService::Options()); }
  void Start(FavorService::Options options,
             const testing::TestServerOptions& server_options = {}) {
    options.max_inputs_per_call = 4;
    options.max_tokens_per_call = 100;
    server_ = std::make_unique<testing::TestServer>(
        options, std::vector<const model::Model*>{&model_}, server_options);
  }
  void TearDown() override { model_.Release(); }

  testing::FakeModel model_;
  std::unique_ptr<testing::TestServer> server_;
};

}  // namespace favor::service

#endif  // FAVOR_TESTS_SERVICE_FAKE_SERVICE_FIXTURE_H_
