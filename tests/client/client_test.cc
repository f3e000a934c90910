// favor::Client against a real FavorService on loopback (FakeModel): every
// call in its three forms (blocking, callback, future), the server's codes
// and messages, deadlines, cancellation at destruction, and round-robin
// across two servers.
#include "favor/client.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/service/test_server.h"

namespace favor {
namespace {

using service::FavorService;
using service::testing::FakeModel;
using service::testing::TestServer;
using service::testing::TestServerOptions;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TestServerOptions WithHealth() {
  TestServerOptions options;
  options.health = true;
  return options;
}

ClientOptions OptionsFor(int port) {
  ClientOptions options;
  options.endpoints = {absl::StrCat("127.0.0.1:", port)};
  options.default_timeout = absl::Seconds(20);
  return options;
}

std::unique_ptr<Client> MakeClient(const ClientOptions& options) {
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

// What FakeModel computes for one sequence: (sum of ids, length, first id, 1).
std::vector<float> FakeEmbedding(const TokenIds& ids) {
  float sum = 0;
  for (uint32_t id : ids) sum += static_cast<float>(id);
  return {sum, static_cast<float>(ids.size()), static_cast<float>(ids[0]), 1};
}

// Waits for a callback-form result.
template <typename T>
class CallbackResult {
 public:
  Callback<T> callback() {
    return [this](absl::StatusOr<T> result) {
      result_ = std::move(result);
      done_.Notify();
    };
  }
  absl::StatusOr<T> Get() {
    EXPECT_TRUE(done_.WaitForNotificationWithTimeout(absl::Seconds(30)));
    return result_;
  }

 private:
  absl::Notification done_;
  absl::StatusOr<T> result_ = absl::UnknownError("no result");
};

class ClientTest : public ::testing::Test {
 protected:
  ClientTest()
      : model_("fake"),
        server_(FavorService::Options(), {&model_}, WithHealth()),
        client_(MakeClient(OptionsFor(server_.port()))) {}

  void ExpectInputOrder(const absl::StatusOr<EmbedResult>& result) {
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_EQ(result->embeddings.size(), inputs_.size());
    for (size_t i = 0; i < inputs_.size(); ++i) {
      EXPECT_EQ(result->embeddings[i].values, FakeEmbedding(inputs_[i]))
          << "input " << i;
      EXPECT_EQ(result->embeddings[i].num_tokens,
                static_cast<int64_t>(inputs_[i].size()));
    }
    EXPECT_EQ(result->model, "fake");
    EXPECT_EQ(result->model_version, "fake-1");
    EXPECT_EQ(result->num_tokens, 6);
  }

  FakeModel model_;
  TestServer server_;
  std::unique_ptr<Client> client_;
  const std::vector<TokenIds> inputs_ = {{5, 6, 7}, {9}, {1, 2}};
};

TEST_F(ClientTest, EmbedBlockingReturnsResultsInInputOrder) {
  ExpectInputOrder(client_->Embed(inputs_));
}

TEST_F(ClientTest, EmbedCallbackReturnsResultsInInputOrder) {
  CallbackResult<EmbedResult> result;
  client_->EmbedAsync(inputs_, {}, {}, result.callback());
  ExpectInputOrder(result.Get());
}

TEST_F(ClientTest, EmbedFutureReturnsResultsInInputOrder) {
  ExpectInputOrder(client_->EmbedFuture(inputs_).get());
}

TEST_F(ClientTest, EmbedTokenEmbeddingsComeAsTensors) {
  EmbedOptions options;
  options.pooling = Pooling::kNone;
  absl::StatusOr<EmbedResult> result = client_->Embed({{3, 4}}, options);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->embeddings[0].token_embeddings.has_value());
  const Tensor& rows = *result->embeddings[0].token_embeddings;
  EXPECT_THAT(rows.shape, ElementsAre(2, 4));
  EXPECT_EQ(rows.dtype, Dtype::kFloat32);
  absl::StatusOr<std::vector<float>> values = rows.ToFloats();
  ASSERT_TRUE(values.ok()) << values.status();
  // FakeModel's token rows: (id, position, 0, 0).
  EXPECT_THAT(*values, ElementsAre(3, 0, 0, 0, 4, 1, 0, 0));
}

TEST_F(ClientTest, EmbedErrorsCarryTheServersCodeAndMessage) {
  // The same bad request through the raw stub gives the reference status.
  v1::EmbedRequest request;
  request.add_inputs()->add_token_ids(100);  // vocab_size is 100
  grpc::ClientContext context;
  v1::EmbedResponse response;
  const grpc::Status reference =
      server_.stub().Embed(&context, request, &response);
  ASSERT_EQ(reference.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  absl::StatusOr<EmbedResult> result = client_->Embed({{100}});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(result.status().message(), reference.error_message());

  CallbackResult<EmbedResult> async;
  client_->EmbedAsync({{100}}, {}, {}, async.callback());
  EXPECT_EQ(async.Get().status(), result.status());
  EXPECT_EQ(client_->EmbedFuture({{100}}).get().status(), result.status());
}

TEST_F(ClientTest, EmbedUnknownModelIsNotFound) {
  EmbedOptions options;
  options.model = "nope";
  absl::StatusOr<EmbedResult> result = client_->Embed({{1}}, options);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("nope"));
}

TEST_F(ClientTest, ModelComputeFailureIsInternal) {
  // FakeModel fails a batch holding token 99, as a LibTorch error would.
  EXPECT_EQ(client_->Embed({{99}}).status().code(),
            absl::StatusCode::kInternal);
}

void ExpectFakeModelList(const absl::StatusOr<ModelList>& list) {
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->models.size(), 1u);
  EXPECT_EQ(list->default_model, "fake");
  EXPECT_EQ(list->models[0].name, "fake");
  EXPECT_TRUE(list->models[0].is_default);
  EXPECT_EQ(list->models[0].config.vocab_size, 100);
}

TEST_F(ClientTest, ListModelsInEveryForm) {
  ExpectFakeModelList(client_->ListModels());
  CallbackResult<ModelList> async;
  client_->ListModelsAsync({}, async.callback());
  ExpectFakeModelList(async.Get());
  ExpectFakeModelList(client_->ListModelsFuture().get());
}

void ExpectFakeModelInfo(const absl::StatusOr<ModelInfo>& info) {
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->name, "fake");
  EXPECT_EQ(info->version, "fake-1");
  EXPECT_EQ(info->config.vocab_size, 100);
  EXPECT_EQ(info->config.hidden_size, 4);
  EXPECT_EQ(info->limits.max_inputs_per_call,
            FavorService::Options().max_inputs_per_call);
  EXPECT_EQ(info->limits.max_tokens_per_input, 64);
  EXPECT_THAT(info->devices, ElementsAre("cpu"));
  EXPECT_EQ(info->dtype, "float32");
}

TEST_F(ClientTest, GetModelInEveryForm) {
  ExpectFakeModelInfo(client_->GetModel());
  ExpectFakeModelInfo(client_->GetModel("fake"));
  CallbackResult<ModelInfo> async;
  client_->GetModelAsync("fake", {}, async.callback());
  ExpectFakeModelInfo(async.Get());
  ExpectFakeModelInfo(client_->GetModelFuture("").get());
  EXPECT_EQ(client_->GetModel("nope").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(ClientTest, CheckHealthInEveryForm) {
  EXPECT_EQ(client_->CheckHealth().value_or(ServingStatus::kUnknown),
            ServingStatus::kServing);
  CallbackResult<ServingStatus> async;
  client_->CheckHealthAsync("", {}, async.callback());
  EXPECT_EQ(async.Get().value_or(ServingStatus::kUnknown),
            ServingStatus::kServing);
  EXPECT_EQ(
      client_->CheckHealthFuture().get().value_or(ServingStatus::kUnknown),
      ServingStatus::kServing);
  EXPECT_EQ(client_->CheckHealth("no.such.Service").status().code(),
            absl::StatusCode::kNotFound);
}

// Softmax attention of one head, computed here as the reference.
std::vector<float> SoftmaxAttention(const std::vector<float>& q,
                                    const std::vector<float>& k,
                                    const std::vector<float>& v, int length,
                                    int dim) {
  std::vector<float> out(length * dim, 0.0f);
  for (int i = 0; i < length; ++i) {
    std::vector<double> weights(length);
    double total = 0;
    for (int j = 0; j < length; ++j) {
      double dot = 0;
      for (int d = 0; d < dim; ++d) dot += q[i * dim + d] * k[j * dim + d];
      weights[j] = std::exp(dot / std::sqrt(static_cast<double>(dim)));
      total += weights[j];
    }
    for (int j = 0; j < length; ++j) {
      for (int d = 0; d < dim; ++d) {
        out[i * dim + d] +=
            static_cast<float>(weights[j] / total * v[j * dim + d]);
      }
    }
  }
  return out;
}

AttendRequest SmallSoftmaxRequest(std::vector<float>* reference) {
  const std::vector<float> q = {0.1f,  0.2f, 0.3f, 0.4f,
                                -0.5f, 0.6f, 0.7f, 0.0f};
  const std::vector<float> k = {0.3f, -0.1f, 0.2f,  0.5f,
                                0.4f, 0.4f,  -0.2f, 0.1f};
  const std::vector<float> v = {1.0f,  2.0f, 3.0f, 4.0f,
                                -1.0f, 0.5f, 0.0f, 2.0f};
  AttendRequest request;
  request.query = Tensor::FromFloats({1, 1, 2, 4}, q);
  request.key = Tensor::FromFloats({1, 1, 2, 4}, k);
  request.value = Tensor::FromFloats({1, 1, 2, 4}, v);
  request.kernel = "softmax";
  *reference = SoftmaxAttention(q, k, v, 2, 4);
  return request;
}

void ExpectSoftmaxOutput(const absl::StatusOr<AttendResult>& result,
                         const std::vector<float>& reference) {
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->kernel, "softmax");
  EXPECT_EQ(result->num_features, 0);
  EXPECT_THAT(result->output.shape, ElementsAre(1, 1, 2, 4));
  EXPECT_EQ(result->output.dtype, Dtype::kFloat32);
  absl::StatusOr<std::vector<float>> values = result->output.ToFloats();
  ASSERT_TRUE(values.ok()) << values.status();
  ASSERT_EQ(values->size(), reference.size());
  for (size_t i = 0; i < reference.size(); ++i) {
    EXPECT_NEAR((*values)[i], reference[i], 1e-5) << "element " << i;
  }
}

TEST_F(ClientTest, AttendInEveryForm) {
  std::vector<float> reference;
  const AttendRequest request = SmallSoftmaxRequest(&reference);
  ExpectSoftmaxOutput(client_->Attend(request), reference);
  CallbackResult<AttendResult> async;
  client_->AttendAsync(request, {}, async.callback());
  ExpectSoftmaxOutput(async.Get(), reference);
  ExpectSoftmaxOutput(client_->AttendFuture(request).get(), reference);
}

TEST_F(ClientTest, AttendKeepsTheQueryDtype) {
  std::vector<float> reference;
  AttendRequest request = SmallSoftmaxRequest(&reference);
  for (Tensor* tensor : {&request.query, &request.key, &request.value}) {
    *tensor = Tensor::FromFloats(tensor->shape, *tensor->ToFloats(),
                                 Dtype::kBFloat16);
  }
  absl::StatusOr<AttendResult> result = client_->Attend(request);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->output.dtype, Dtype::kBFloat16);
  absl::StatusOr<std::vector<float>> values = result->output.ToFloats();
  ASSERT_TRUE(values.ok());
  for (size_t i = 0; i < reference.size(); ++i) {
    EXPECT_NEAR((*values)[i], reference[i], 0.05) << "element " << i;
  }
}

TEST_F(ClientTest, AttendRefusesABadTensorBeforeSending) {
  std::vector<float> reference;
  AttendRequest request = SmallSoftmaxRequest(&reference);
  request.key.data.pop_back();
  absl::StatusOr<AttendResult> result = client_->Attend(request);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("AttendRequest.key"));
  // A bad kernel name is the server's INVALID_ARGUMENT.
  request = SmallSoftmaxRequest(&reference);
  request.kernel = "no-such-kernel";
  result = client_->AttendFuture(request).get();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("softmax"));
}

TEST_F(ClientTest, DeadlineExceededWhileTheModelIsHeld) {
  model_.Hold();
  CallOptions call;
  call.timeout = absl::Milliseconds(300);
  const absl::Time start = absl::Now();
  absl::StatusOr<EmbedResult> result = client_->Embed({{1, 2}}, {}, call);
  const absl::Duration elapsed = absl::Now() - start;
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_GE(elapsed, absl::Milliseconds(290));
  EXPECT_LT(elapsed, absl::Milliseconds(1500));

  CallbackResult<EmbedResult> async;
  call.timeout = absl::ZeroDuration();
  call.deadline = absl::Now() + absl::Milliseconds(300);
  client_->EmbedAsync({{1, 2}}, {}, call, async.callback());
  EXPECT_EQ(async.Get().status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(absl::Now() - call.deadline, absl::Milliseconds(1200));
  model_.Release();
}

TEST_F(ClientTest, DefaultTimeoutAppliesToCallsWithoutOne) {
  ClientOptions options = OptionsFor(server_.port());
  options.default_timeout = absl::Milliseconds(300);
  std::unique_ptr<Client> client = MakeClient(options);
  model_.Hold();
  const absl::Time start = absl::Now();
  auto future = client->EmbedFuture({{1}});
  EXPECT_EQ(future.get().status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(1500));
  model_.Release();
}

TEST_F(ClientTest, DestroyingTheClientCancelsCallsInFlight) {
  model_.Hold();
  CallbackResult<EmbedResult> async;
  client_->EmbedAsync({{1}}, {}, {}, async.callback());
  model_.WaitForCalls(1);
  client_.reset();  // returns once the callback has run
  EXPECT_EQ(async.Get().status().code(), absl::StatusCode::kCancelled);
  model_.Release();
}

TEST_F(ClientTest, MaxMessageSizeLimitsWhatComesBack) {
  ClientOptions options = OptionsFor(server_.port());
  options.max_message_size_bytes = 200;
  options.keepalive.keepalive_time = absl::Seconds(30);  // accepted alongside
  std::unique_ptr<Client> client = MakeClient(options);
  EXPECT_TRUE(client->Embed({{1, 2}}).ok());  // small answer: fine
  EmbedOptions token_rows;
  token_rows.pooling = Pooling::kNone;  // 40 rows of 4 floats: 640 bytes
  absl::StatusOr<EmbedResult> result =
      client->Embed({TokenIds(40, 3)}, token_rows);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("Received message larger than max"));
  EXPECT_EQ(model_.sequences(), 2);  // computed once each: not retried
}

TEST(ClientCreateTest, RefusesBadOptions) {
  ClientOptions options;
  options.endpoints.clear();
  EXPECT_EQ(Client::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.endpoints = {"127.0.0.1:1"};
  options.retry.max_attempts = 0;
  EXPECT_EQ(Client::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.retry.max_attempts = 1;
  options.tls.client_certificate_pem = "cert";  // without its key
  EXPECT_EQ(Client::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ClientUnreachableTest, UnreachableServerIsUnavailable) {
  ClientOptions options;
  options.endpoints = {"127.0.0.1:1"};  // nothing listens on port 1
  options.retry.max_attempts = 2;
  options.retry.initial_backoff = absl::Milliseconds(10);
  std::unique_ptr<Client> client = MakeClient(options);
  EXPECT_EQ(client->Embed({{1}}).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(client->CheckHealth().status().code(),
            absl::StatusCode::kUnavailable);
}

// Two servers behind one client: both get calls.
class ClientRoundRobinTest : public ::testing::Test {
 protected:
  ClientRoundRobinTest()
      : model_a_("fake"),
        model_b_("fake"),
        server_a_(FavorService::Options(), {&model_a_}),
        server_b_(FavorService::Options(), {&model_b_}) {}

  void ExpectBothServed(Client& client) {
    for (int i = 0; i < 40; ++i) {
      CallOptions call;
      call.wait_for_ready = true;
      absl::StatusOr<EmbedResult> result = client.Embed({{1, 2}}, {}, call);
      ASSERT_TRUE(result.ok()) << result.status();
    }
    EXPECT_GT(model_a_.calls(), 0);
    EXPECT_GT(model_b_.calls(), 0);
    EXPECT_EQ(model_a_.sequences() + model_b_.sequences(), 40);
  }

  FakeModel model_a_;
  FakeModel model_b_;
  TestServer server_a_;
  TestServer server_b_;
};

TEST_F(ClientRoundRobinTest, IpAddressesShareOneRoundRobinChannel) {
  ClientOptions options = OptionsFor(server_a_.port());
  options.endpoints.push_back(absl::StrCat("127.0.0.1:", server_b_.port()));
  std::unique_ptr<Client> client = MakeClient(options);
  EXPECT_THAT(client->targets(),
              ElementsAre(absl::StrCat("ipv4:127.0.0.1:", server_a_.port(),
                                       ",127.0.0.1:", server_b_.port())));
  ExpectBothServed(*client);
}

TEST_F(ClientRoundRobinTest, OtherTargetsGetAChannelEach) {
  ClientOptions options;
  options.endpoints = {absl::StrCat("dns:///127.0.0.1:", server_a_.port()),
                       absl::StrCat("ipv4:127.0.0.1:", server_b_.port())};
  std::unique_ptr<Client> client = MakeClient(options);
  EXPECT_EQ(client->targets().size(), 2u);
  ExpectBothServed(*client);
}

}  // namespace
}  // namespace favor
