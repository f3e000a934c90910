// The service over real gRPC on loopback: edge validation, results against
// direct Model::Embed calls under concurrency, deadlines, cancellation, a
// full queue, draining, model descriptions, Attend and a service without
// metrics. EmbedStream: embed_stream_call_test.cc; the /metrics scrape:
// tests/http/metrics_server_test.cc.
#include "server/service/favor_service.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/service/status_mapping.h"
#include "tests/service/fake_service_fixture.h"
#include "tests/service/test_server.h"

namespace favor::service {
namespace {

using ::favor::service::testing::TestServer;
using ::favor::service::testing::TestServerOptions;
using ::testing::EndsWith;
using ::testing::HasSubstr;

struct BadEmbed {
  const char* name;
  v1::EmbedRequest request;
  grpc::StatusCode code;
  const char* message;
};

TEST_F(FakeServiceTest, BadEmbedRequestsNameTheFieldAndTheLimit) {
  Start();
  std::vector<BadEmbed> cases = {
      {"no inputs", EmbedOf({}), grpc::INVALID_ARGUMENT, "inputs is empty"},
      {"empty sequence", EmbedOf({{1}, {}}), grpc::INVALID_ARGUMENT,
       "inputs[1].token_ids is empty"},
      {"id over vocab", EmbedOf({{1, 2, 100}}), grpc::INVALID_ARGUMENT,
       "inputs[0].token_ids[2] is 100; must be in [0, 100) (vocab_size)"},
      {"negative id", EmbedOf({{0xffffffffu}}), grpc::INVALID_ARGUMENT,
       "is 4294967295; must be in [0, 100)"},
      {"too long", EmbedOf({std::vector<uint32_t>(65, 1)}),
       grpc::INVALID_ARGUMENT, "65 tokens; at most 64 (max_tokens_per_input)"},
      {"too many inputs", EmbedOf({{1}, {1}, {1}, {1}, {1}}),
       grpc::INVALID_ARGUMENT, "at most 4 (max_inputs_per_call)"},
      {"too many tokens",
       EmbedOf({std::vector<uint32_t>(60, 1), std::vector<uint32_t>(60, 1)}),
       grpc::INVALID_ARGUMENT, "at most 100 (max_tokens_per_call)"},
  };
  v1::EmbedRequest unknown_model = EmbedOf({{1}});
  unknown_model.set_model("nope");
  cases.push_back({"unknown model", unknown_model, grpc::NOT_FOUND,
                   "model 'nope' not found; models: fake"});
  v1::EmbedRequest bad_pooling = EmbedOf({{1}});
  bad_pooling.set_pooling(static_cast<v1::Pooling>(99));
  cases.push_back({"unknown pooling", bad_pooling, grpc::INVALID_ARGUMENT,
                   "pooling has unknown value 99"});
  v1::EmbedRequest attention_pooling = EmbedOf({{1}});
  attention_pooling.set_pooling(v1::POOLING_ATTENTION);
  cases.push_back({"no pooler", attention_pooling, grpc::INVALID_ARGUMENT,
                   "POOLING_ATTENTION needs a model with an attention pooler"});
  v1::EmbedRequest bad_dtype = EmbedOf({{1}});
  bad_dtype.set_token_embeddings_dtype(static_cast<v1::Dtype>(7));
  cases.push_back({"unknown dtype", bad_dtype, grpc::INVALID_ARGUMENT,
                   "token_embeddings_dtype has unknown value 7"});
  for (const BadEmbed& c : cases) {
    const grpc::Status status = CallEmbed(server_->stub(), c.request);
    EXPECT_EQ(status.error_code(), c.code) << c.name;
    EXPECT_THAT(status.error_message(), HasSubstr(c.message)) << c.name;
  }
  EXPECT_EQ(model_.calls(), 0);
}

struct BadAttend {
  const char* name;
  v1::AttendRequest request;
  const char* message;
};

std::vector<BadAttend> BadAttendCases() {
  std::vector<BadAttend> cases;
  auto add = [&](const char* name, const char* message, auto mutate) {
    v1::AttendRequest request = UniformAttend("softmax");
    mutate(request);
    cases.push_back({name, request, message});
  };
  add("unknown kernel", "kernel: unknown attention kernel 'bogus'; known",
      [](auto& r) { r.set_kernel("bogus"); });
  add("bytes vs shape", "query.data has 28 bytes; shape [1, 1, 4, 2]",
      [](auto& r) { r.mutable_query()->mutable_data()->resize(28); });
  add("claimed huge shape", "each dimension must be >= 1",
      [](auto& r) { r.mutable_key()->set_shape(2, int64_t{1} << 40); });
  add("no dtype", "query.dtype is DTYPE_UNSPECIFIED",
      [](auto& r) { r.mutable_query()->set_dtype(v1::DTYPE_UNSPECIFIED); });
  add("rank", "value.shape has 3 dimensions; must have 4",
      [](auto& r) { r.mutable_value()->mutable_shape()->RemoveLast(); });
  add("head dims disagree", "key.shape[3] (head_dim) is 1; must equal",
      [](auto& r) {
        *r.mutable_key() = TensorOf({1, 1, 8, 1}, std::vector<float>(8));
      });
  add("dtypes disagree", "same dtype", [](auto& r) {
    r.mutable_key()->set_dtype(v1::DTYPE_FLOAT16);
    r.mutable_key()->mutable_data()->resize(16);
  });
  add("NaN", "query.data holds NaN or infinity", [](auto& r) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(r.mutable_query()->mutable_data()->data(), &nan, 4);
  });
  add("Inf", "value.data holds NaN or infinity", [](auto& r) {
    const float inf = std::numeric_limits<float>::infinity();
    std::memcpy(r.mutable_value()->mutable_data()->data() + 4, &inf, 4);
  });
  add("projection shape", "projection_matrix must be DTYPE_FLOAT32 of shape",
      [](auto& r) {
        r.set_kernel("favor+");
        *r.mutable_projection_matrix() =
            TensorOf({8, 3}, std::vector<float>(24));
      });
  add("mask size", "key_padding_mask has 3 values; must be empty or",
      [](auto& r) {
        for (int i = 0; i < 3; ++i) r.add_key_padding_mask(false);
      });
  add("causal lengths", "causal needs query_length == key_length", [](auto& r) {
    r.set_causal(true);
    *r.mutable_query() = TensorOf({1, 1, 2, 2}, std::vector<float>(4));
  });
  return cases;
}

TEST_F(FakeServiceTest, BadAttendRequestsNameTheFieldAndTheLimit) {
  Start();
  for (const BadAttend& c : BadAttendCases()) {
    const grpc::Status status = CallAttend(server_->stub(), c.request);
    EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT) << c.name;
    EXPECT_THAT(status.error_message(), HasSubstr(c.message)) << c.name;
  }
}

TEST_F(FakeServiceTest, ComputeFailureIsInternalWithItsCause) {
  Start();
  const grpc::Status status = CallEmbed(server_->stub(), EmbedOf({{1}, {99}}));
  EXPECT_EQ(status.error_code(), grpc::INTERNAL);
  EXPECT_THAT(status.error_message(), HasSubstr("fake failure"));
  EXPECT_TRUE(CallEmbed(server_->stub(), EmbedOf({{1}})).ok());
}

TEST_F(FakeServiceTest, TruncationKeepsTheStartOrTheEnd) {
  Start();
  std::vector<uint32_t> ids(70);
  for (int i = 0; i < 70; ++i) ids[i] = i;
  for (auto [truncation, first] : {std::pair{v1::TRUNCATION_RIGHT, 0},
                                   std::pair{v1::TRUNCATION_LEFT, 6}}) {
    v1::EmbedRequest request = EmbedOf({ids, {5}});
    request.set_truncation(truncation);
    v1::EmbedResponse response;
    ASSERT_TRUE(CallEmbed(server_->stub(), request, &response).ok());
    const v1::Embedding& e = response.embeddings(0);
    EXPECT_EQ(e.num_tokens(), 64);
    EXPECT_EQ(e.num_truncated_tokens(), 6);
    EXPECT_EQ(e.values(1), 64);
    EXPECT_EQ(e.values(2), first);
    EXPECT_EQ(response.embeddings(1).values(0), 5);
    EXPECT_EQ(response.num_tokens(), 65);
    EXPECT_EQ(response.model(), "fake");
    EXPECT_EQ(response.model_version(), "fake-1");
  }
}

TEST_F(FakeServiceTest, TokenEmbeddingsInEachDtype) {
  Start();
  for (v1::Dtype dtype :
       {v1::DTYPE_FLOAT32, v1::DTYPE_FLOAT16, v1::DTYPE_BFLOAT16}) {
    v1::EmbedRequest request = EmbedOf({{7, 9, 11}});
    request.set_pooling(v1::POOLING_NONE);
    request.set_token_embeddings_dtype(dtype);
    v1::EmbedResponse response;
    ASSERT_TRUE(CallEmbed(server_->stub(), request, &response).ok());
    const v1::Embedding& e = response.embeddings(0);
    EXPECT_EQ(e.values_size(), 0);
    const v1::Tensor& t = e.token_embeddings();
    EXPECT_THAT(t.shape(), ::testing::ElementsAre(3, 4));
    EXPECT_EQ(t.dtype(), dtype);
    EXPECT_EQ(t.data().size(), 12u * (dtype == v1::DTYPE_FLOAT32 ? 4 : 2));
    if (dtype == v1::DTYPE_FLOAT16) {  // row 1 starts with 9.0: 0x4880
      EXPECT_EQ(static_cast<uint8_t>(t.data()[8]), 0x80);
      EXPECT_EQ(static_cast<uint8_t>(t.data()[9]), 0x48);
    }
    if (dtype == v1::DTYPE_FLOAT32) {
      EXPECT_EQ(FloatsOf(t)[8], 11.0f);
    }
  }
}

TEST_F(FakeServiceTest, DeadlinePassingInTheQueueIsNeverComputed) {
  Start();
  model_.Hold();
  std::thread first(
      [&] { EXPECT_TRUE(CallEmbed(server_->stub(), EmbedOf({{1}})).ok()); });
  model_.WaitForCalls(1);
  const grpc::Status late = CallEmbed(server_->stub(), EmbedOf({{2}}), nullptr,
                                      absl::Milliseconds(200));
  EXPECT_EQ(late.error_code(), grpc::DEADLINE_EXCEEDED);
  // The server's copy of the deadline counts from the call's arrival, a
  // moment after the client's: let it pass too before the worker goes on.
  // A sleep, because nothing the test can see happens when it passes: the
  // late call waits in the queue while the worker is held, and the batcher
  // drops it at its deadline, on the real clock the service runs on.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  model_.Release();
  first.join();
  ASSERT_TRUE(CallEmbed(server_->stub(), EmbedOf({{3}})).ok());
  EXPECT_EQ(model_.sequences(), 2);  // the first and the last, not the late one
}

TEST_F(FakeServiceTest, CancelledCallIsDropped) {
  Start();
  model_.Hold();
  std::thread first(
      [&] { EXPECT_TRUE(CallEmbed(server_->stub(), EmbedOf({{1}})).ok()); });
  model_.WaitForCalls(1);
  grpc::ClientContext context;
  std::thread canceller([&] {
    // Cancel once the server has the call (the held one and this one open).
    EXPECT_TRUE(
        WaitUntil([&] { return server_->service().num_open_calls() == 2; }));
    context.TryCancel();
  });
  v1::EmbedResponse response;
  const grpc::Status status =
      server_->stub().Embed(&context, EmbedOf({{2}, {3}}), &response);
  EXPECT_EQ(status.error_code(), grpc::CANCELLED);
  canceller.join();
  // The client knows at once; the server learns of the cancellation when the
  // RST_STREAM arrives, a moment later. Give it that moment before the
  // held worker frees and the cancelled call's inputs would be batched. A
  // sleep, because the server announces nothing then: it sets the call's
  // cancellation flag and wakes the batcher, which drops the queued inputs
  // (the call stays open until that answer).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  model_.Release();
  first.join();
  ASSERT_TRUE(CallEmbed(server_->stub(), EmbedOf({{3}})).ok());
  EXPECT_EQ(model_.sequences(), 2);
}

// Room for exactly two calls: one running (held in the model) and one
// queued (max_queue_requests; no batch is formed while the worker is
// busy). Calls are sent one at a time, each once the server has decided the
// previous one: the first two are admitted and succeed, every later one is
// refused with a retry hint.
TEST_F(FakeServiceTest, FullQueueIsResourceExhaustedWithARetryHint) {
  FavorService::Options options;
  options.embed_batching.max_queue_requests = 1;
  options.embed_batching.max_batch_requests = 1;
  Start(options);
  model_.Hold();
  constexpr int kCalls = 6, kAdmitted = 2;
  std::vector<grpc::Status> results(kCalls);
  std::vector<std::string> trailers(kCalls);
  std::vector<absl::Notification> answered(kCalls);
  std::vector<std::thread> callers;
  int refused = 0;
  for (int i = 0; i < kCalls; ++i) {
    callers.emplace_back([&, i] {
      results[i] =
          CallEmbedWithRetryHint(server_->stub(), EmbedOf({{1}}), &trailers[i]);
      answered[i].Notify();
    });
    // The server has the call once it runs (the first) or is open beside
    // the admitted ones; a refused call may be answered before either.
    if (!WaitUntil([&] {
          return answered[i].HasBeenNotified() ||
                 (i == 0
                      ? model_.calls() == 1
                      : server_->service().num_open_calls() == i + 1 - refused);
        })) {
      ADD_FAILURE() << "the server never took call " << i;
      break;
    }
    // A refused call is answered at once; an admitted one then just waits
    // (the model is held), an event the service does not announce. So a
    // call still unanswered after this bound counts as admitted. A slow
    // machine could only make the statuses below wrong, never make a wrong
    // server pass.
    if (answered[i].WaitForNotificationWithTimeout(absl::Milliseconds(200))) {
      ++refused;
    }
  }
  model_.Release();
  for (auto& caller : callers) caller.join();
  for (int i = 0; i < kCalls; ++i) {
    if (i < kAdmitted) {
      EXPECT_TRUE(results[i].ok())
          << "call " << i << ": " << results[i].error_message();
      continue;
    }
    EXPECT_EQ(results[i].error_code(), grpc::RESOURCE_EXHAUSTED)
        << "call " << i;
    EXPECT_THAT(results[i].error_message(), HasSubstr("retry after"));
    ASSERT_FALSE(trailers[i].empty()) << "call " << i;
    EXPECT_GT(std::stoll(trailers[i]), 0);
  }
  EXPECT_EQ(refused, kCalls - kAdmitted);
  EXPECT_EQ(model_.sequences(), kAdmitted);
}

// The inputs of one call, on an idle server, run in one batch: the worker
// waits for the call to finish enqueueing them (Batcher::EnqueueGroup). It
// took the first few alone before: a 64-input call of 8-token texts ran as
// 1.5 batches on average (favor-bench --inputs_per_call=64).
TEST_F(FakeServiceTest, AnIdleServerRunsACallsInputsInOneBatch) {
  FavorService::Options options;
  options.embed_batching.max_batch_requests = 256;
  options.embed_batching.max_queue_requests = 256;
  options.max_inputs_per_call = 256;  // not Start(): it allows 4
  // The group, not its time bound, must keep the call whole, however slowly
  // a loaded machine enqueues (the bound has a fake-clock test of its own).
  options.embed_batching.max_enqueue_group_wait = absl::Hours(1);
  server_ = std::make_unique<testing::TestServer>(
      options, std::vector<const model::Model*>{&model_});
  std::vector<std::vector<uint32_t>> inputs;
  for (uint32_t i = 0; i < 256; ++i) inputs.push_back({i % 90 + 1});
  for (int call = 1; call <= 5; ++call) {
    const grpc::Status status = CallEmbed(server_->stub(), EmbedOf(inputs));
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(model_.calls(), call) << "call " << call << " was split";
  }
  EXPECT_EQ(model_.sequences(), 5 * 256);
}

// A call with more inputs (or tokens) than the whole queue holds is refused
// without a retry hint: it would fill the queue with its own inputs and be
// refused again, on an idle server, every time it was retried.
TEST_F(FakeServiceTest, ACallLargerThanTheQueueIsRefusedWithoutARetryHint) {
  FavorService::Options options;
  options.embed_batching.max_queue_requests = 2;
  options.embed_batching.max_queue_tokens = 10;
  Start(options);
  struct Case {
    v1::EmbedRequest request;
    std::string why;
  } cases[] = {{EmbedOf({{1}, {2}, {3}}), "the call's 3 inputs"},
               {EmbedOf({{1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 5}}), "of 11 tokens"},
               {EmbedOf({{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}), "of 11 tokens"}};
  for (const Case& c : cases) {
    std::string trailer;
    const grpc::Status status =
        CallEmbedWithRetryHint(server_->stub(), c.request, &trailer);
    EXPECT_EQ(status.error_code(), grpc::RESOURCE_EXHAUSTED) << c.why;
    EXPECT_THAT(status.error_message(), HasSubstr(c.why));
    EXPECT_THAT(status.error_message(),
                HasSubstr("can never be queued together"));
    // As the memory budget's refusal ends: favor's client does not retry.
    EXPECT_THAT(status.error_message(), EndsWith("it can never run here"));
    EXPECT_EQ(trailer, "") << c.why;
  }
  // At the limits, the calls run.
  EXPECT_TRUE(CallEmbed(server_->stub(), EmbedOf({{1, 2, 3, 4, 5}, {6, 7, 8}}))
                  .ok());
  EXPECT_EQ(model_.sequences(), 2);
}

TEST_F(FakeServiceTest, DrainingRefusesNewCalls) {
  Start();
  ASSERT_TRUE(CallEmbed(server_->stub(), EmbedOf({{1}})).ok());
  server_->service().StartDraining();
  EXPECT_EQ(CallEmbed(server_->stub(), EmbedOf({{1}})).error_code(),
            grpc::UNAVAILABLE);
  EXPECT_EQ(CallAttend(server_->stub(), UniformAttend("softmax")).error_code(),
            grpc::UNAVAILABLE);
  grpc::ClientContext context;
  v1::ListModelsResponse models;
  EXPECT_EQ(server_->stub()
                .ListModels(&context, v1::ListModelsRequest(), &models)
                .error_code(),
            grpc::UNAVAILABLE);
}

// What the shutdown waits for before the process ends: every call accepted
// before draining has its status sent; calls refused while draining do not
// count.
TEST_F(FakeServiceTest, WaitForOpenCallsWaitsForCallsAcceptedBeforeDraining) {
  Start();
  model_.Hold();
  grpc::Status first;
  std::thread caller([&] {
    first = CallEmbed(server_->stub(), EmbedOf({{1, 2}}));
  });
  model_.WaitForCalls(1);
  server_->service().StartDraining();
  EXPECT_EQ(CallEmbed(server_->stub(), EmbedOf({{1}})).error_code(),
            grpc::UNAVAILABLE);
  EXPECT_FALSE(server_->service().WaitForOpenCalls(absl::Milliseconds(50)));
  EXPECT_EQ(server_->service().num_open_calls(), 1);
  model_.Release();
  caller.join();
  EXPECT_TRUE(first.ok()) << first.error_message();
  EXPECT_TRUE(server_->service().WaitForOpenCalls(absl::Seconds(30)));
  EXPECT_EQ(server_->service().num_open_calls(), 0);
}

// Given no Metrics, the service records into Metrics::Noop(): every method
// still answers.
TEST_F(FakeServiceTest, ServesEveryMethodWithoutMetrics) {
  TestServerOptions server_options;
  server_options.metrics = false;
  Start(FavorService::Options(), server_options);
  v1::EmbedResponse response;
  ASSERT_TRUE(CallEmbed(server_->stub(), EmbedOf({{1, 2}}), &response).ok());
  EXPECT_EQ(response.embeddings(0).values(0), 3);
  EXPECT_TRUE(CallAttend(server_->stub(), UniformAttend("softmax")).ok());
  grpc::ClientContext list_context;
  v1::ListModelsResponse list;
  EXPECT_TRUE(server_->stub()
                  .ListModels(&list_context, v1::ListModelsRequest(), &list)
                  .ok());
  grpc::ClientContext get_context;
  v1::GetModelResponse got;
  EXPECT_TRUE(
      server_->stub().GetModel(&get_context, v1::GetModelRequest(), &got).ok());
  grpc::ClientContext stream_context;
  auto stream = server_->stub().EmbedStream(&stream_context);
  v1::EmbedStreamRequest message;
  *message.mutable_request() = EmbedOf({{4}});
  ASSERT_TRUE(stream->Write(message));
  stream->WritesDone();
  v1::EmbedStreamResponse answer;
  ASSERT_TRUE(stream->Read(&answer));
  EXPECT_TRUE(answer.has_response()) << answer.error().message();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(FakeServiceTest, ModelsAndTheirLimits) {
  FavorService::Options options;
  options.embed_batching.max_batch_tokens = 777;
  Start(options);
  grpc::ClientContext list_context;
  v1::ListModelsResponse list;
  ASSERT_TRUE(server_->stub()
                  .ListModels(&list_context, v1::ListModelsRequest(), &list)
                  .ok());
  EXPECT_EQ(list.default_model(), "fake");
  ASSERT_EQ(list.models_size(), 1);
  const v1::ModelInfo& info = list.models(0);
  EXPECT_EQ(info.name(), "fake");
  EXPECT_EQ(info.version(), "fake-1");
  EXPECT_TRUE(info.is_default());
  EXPECT_EQ(info.config().vocab_size(), 100);
  EXPECT_EQ(info.limits().max_tokens_per_input(), 64);
  EXPECT_EQ(info.limits().max_inputs_per_call(), 4);
  EXPECT_EQ(info.limits().max_tokens_per_call(), 100);
  EXPECT_EQ(info.limits().max_tokens_per_batch(), 777);
  EXPECT_THAT(info.devices(), ::testing::ElementsAre("cpu"));
  EXPECT_EQ(info.dtype(), "float32");
  grpc::ClientContext get_context;
  v1::GetModelRequest get;
  v1::GetModelResponse got;
  ASSERT_TRUE(server_->stub().GetModel(&get_context, get, &got).ok());
  EXPECT_EQ(got.model().name(), "fake");
  grpc::ClientContext missing_context;
  get.set_model("missing");
  EXPECT_EQ(server_->stub().GetModel(&missing_context, get, &got).error_code(),
            grpc::NOT_FOUND);
}

TEST_F(FakeServiceTest, AttendWithUniformWeightsAveragesTheValues) {
  Start();
  for (const char* kernel : {"softmax", "favor+", "relu", "elu+1"}) {
    v1::AttendResponse response;
    ASSERT_TRUE(
        CallAttend(server_->stub(), UniformAttend(kernel), &response).ok())
        << kernel;
    EXPECT_THAT(response.output().shape(), ::testing::ElementsAre(1, 1, 4, 2));
    const std::vector<float> out = FloatsOf(response.output());
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(out[2 * i], 1.5, 1e-3) << kernel;
      EXPECT_NEAR(out[2 * i + 1], 15, 1e-2) << kernel;
    }
    EXPECT_EQ(response.kernel(), kernel);
  }
  v1::AttendRequest masked = UniformAttend("favor+");
  for (bool pad : {false, false, true, true}) masked.add_key_padding_mask(pad);
  v1::AttendResponse response;
  ASSERT_TRUE(CallAttend(server_->stub(), masked, &response).ok());
  EXPECT_NEAR(FloatsOf(response.output())[1], 5, 1e-2);
  EXPECT_EQ(response.num_features(), 8);
}

// A real (small, random) model: many concurrent clients, each answer checked
// against a direct Model::Embed of the same sequence alone.
TEST(RealModelServiceTest, ConcurrentClientsGetTheirOwnEmbeddings) {
  const std::string dir =
      (std::filesystem::path(::testing::TempDir()) / "favor_service_model")
          .string();
  std::unique_ptr<model::Model> model =
      testing::LoadSmallRandomModel(dir + "/small");
  const FavorService::Options options;
  TestServer server(options, {model.get()});
  constexpr int kClients = 8;
  constexpr int kCallsPerClient = 6;
  std::vector<std::thread> clients;
  std::atomic<int> checked{0};
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937 random(c);
      auto stub = server.NewStub();
      for (int call = 0; call < kCallsPerClient; ++call) {
        std::vector<std::vector<uint32_t>> inputs(1 + random() % 3);
        for (auto& ids : inputs) {
          ids.resize(1 + random() % 100);
          for (auto& id : ids) id = random() % 64;
        }
        v1::EmbedResponse response;
        const grpc::Status status =
            CallEmbed(*stub, EmbedOf(inputs), &response);
        ASSERT_TRUE(status.ok()) << status.error_message();
        ASSERT_EQ(response.embeddings_size(), static_cast<int>(inputs.size()));
        for (size_t i = 0; i < inputs.size(); ++i) {
          std::vector<int32_t> ids(inputs[i].begin(), inputs[i].end());
          const std::vector<int64_t> offsets = {
              0, static_cast<int64_t>(ids.size())};
          auto direct = model->Embed(ids, offsets);
          ASSERT_TRUE(direct.ok()) << direct.status();
          const auto& got = response.embeddings(i).values();
          ASSERT_EQ(got.size(), static_cast<int>(direct->values.size()));
          for (int k = 0; k < got.size(); ++k) {
            ASSERT_NEAR(got[k], direct->values[k],
                        1e-4 + 1e-4 * std::abs(direct->values[k]));
          }
          ++checked;
        }
      }
    });
  }
  for (auto& client : clients) client.join();
  EXPECT_GE(checked.load(), kClients * kCallsPerClient);
}

}  // namespace
}  // namespace favor::service
