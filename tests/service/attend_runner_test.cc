// ComputeAttend's choice of projection: a seeded request draws exactly the
// matrix the attention library draws for its random_features, and the
// three kinds give three different attentions on non-degenerate inputs.
// Its inputs land on the runner's device (LibTorch's meta device here; a
// CUDA device where there is one, against the CPU).
// And Attend through the service, over gRPC, on random inputs with every
// kernel: the library's own output for the same tensors.
#include "server/service/attend_runner.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/attention/attention.h"
#include "server/attention/projection.h"
#include "server/service/attend_inputs.h"
#include "server/service/attend_validation.h"
#include "tests/service/fake_service_fixture.h"

namespace favor::service {
namespace {

constexpr int64_t kHeadDim = 8, kFeatures = 16;
constexpr uint64_t kSeed = 7;

v1::Tensor RandomTensor(std::vector<int64_t> shape) {
  const at::Tensor values = at::randn(shape);
  std::vector<float> data(values.data_ptr<float>(),
                          values.data_ptr<float>() + values.numel());
  return TensorOf(shape, data);
}

// Batch 2, 3 heads, 5 queries against 7 keys: no two kernels or projections
// agree on such inputs by accident.
v1::AttendRequest RandomAttend() {
  at::manual_seed(11);
  v1::AttendRequest request;
  *request.mutable_query() = RandomTensor({2, 3, 5, kHeadDim});
  *request.mutable_key() = RandomTensor({2, 3, 7, kHeadDim});
  *request.mutable_value() = RandomTensor({2, 3, 7, 4});
  request.set_kernel("favor+");
  request.set_num_random_features(kFeatures);
  request.set_projection_seed(kSeed);
  return request;
}

std::vector<float> Attend(const v1::AttendRequest& request) {
  absl::StatusOr<AttendPlan> plan =
      ValidateAttendRequest(request, AttendLimits());
  EXPECT_TRUE(plan.ok()) << plan.status();
  v1::AttendResponse response;
  const absl::Status status = ComputeAttend(*plan, request, "cpu", &response);
  EXPECT_TRUE(status.ok()) << status;
  return FloatsOf(response.output());
}

// The same request with the library's own draw passed as the matrix.
v1::AttendRequest WithDrawnMatrix(v1::AttendRequest request, bool orthogonal,
                                  bool simplex) {
  attention::ProjectionOptions options;
  options.num_features = kFeatures;
  options.head_dim = kHeadDim;
  options.orthogonal = orthogonal;
  options.simplex = simplex;
  options.seed = kSeed;
  const at::Tensor drawn = attention::DrawProjection(options)->contiguous();
  *request.mutable_projection_matrix() =
      TensorOf({kFeatures, kHeadDim},
               std::vector<float>(drawn.data_ptr<float>(),
                                  drawn.data_ptr<float>() + drawn.numel()));
  return request;
}

TEST(ComputeAttendTest, SeededProjectionsAreTheLibrarysDraws) {
  const v1::AttendRequest base = RandomAttend();
  struct Case {
    v1::RandomFeatures kind;
    bool orthogonal, simplex;
  };
  std::vector<std::vector<float>> outputs;
  for (const Case& c : {Case{v1::RANDOM_FEATURES_ORTHOGONAL, true, false},
                        Case{v1::RANDOM_FEATURES_IID, false, false},
                        Case{v1::RANDOM_FEATURES_SIMPLEX, true, true}}) {
    v1::AttendRequest seeded = base;
    seeded.set_random_features(c.kind);
    const std::vector<float> out = Attend(seeded);
    EXPECT_EQ(out, Attend(WithDrawnMatrix(base, c.orthogonal, c.simplex)))
        << v1::RandomFeatures_Name(c.kind);
    for (const std::vector<float>& other : outputs) EXPECT_NE(out, other);
    outputs.push_back(out);
  }
}

at::Tensor TensorFrom(const v1::Tensor& tensor) {
  std::vector<int64_t> shape(tensor.shape().begin(), tensor.shape().end());
  std::vector<float> values = FloatsOf(tensor);
  return at::tensor(values).view(shape).clone();
}

AttendPlan PlanOf(const v1::AttendRequest& request) {
  absl::StatusOr<AttendPlan> plan =
      ValidateAttendRequest(request, AttendLimits());
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : AttendPlan();
}

// Every tensor the attention library gets is on the runner's device, the
// key padding mask and the drawn projection included. The meta device
// holds shapes and no data, so this runs on any machine.
TEST(PlaceAttendInputsTest, EveryTensorLandsOnTheDevice) {
  v1::AttendRequest request = RandomAttend();
  for (int i = 0; i < 2 * 7; ++i) request.add_key_padding_mask(i % 7 >= 5);
  const c10::Device meta(c10::kMeta);
  absl::StatusOr<AttendInputs> in =
      PlaceAttendInputs(PlanOf(request), request, meta);
  ASSERT_TRUE(in.ok()) << in.status();
  for (const at::Tensor* t : {&in->query, &in->key, &in->value,
                              &in->projection, &in->key_padding_mask}) {
    ASSERT_TRUE(t->defined());
    EXPECT_EQ(t->device(), meta);
  }
  EXPECT_EQ(in->query.sizes(), at::IntArrayRef({2, 3, 5, kHeadDim}));
  EXPECT_EQ(in->projection.sizes(), at::IntArrayRef({kFeatures, kHeadDim}));
  EXPECT_EQ(in->key_padding_mask.scalar_type(), at::kBool);
}

TEST(PlaceAttendInputsTest, OnTheCpuTheyAreTheRequestsValues) {
  v1::AttendRequest request = RandomAttend();
  for (int i = 0; i < 2 * 7; ++i) request.add_key_padding_mask(i % 7 >= 5);
  absl::StatusOr<AttendInputs> in =
      PlaceAttendInputs(PlanOf(request), request, c10::Device(c10::kCPU));
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_TRUE(at::equal(in->key, TensorFrom(request.key())));
  EXPECT_TRUE(in->key_padding_mask[1][5].item<bool>());
  EXPECT_FALSE(in->key_padding_mask[1][4].item<bool>());
}

TEST(PlaceAttendInputsTest, NaNIsRefusedOnTheHostNamingTheField) {
  v1::AttendRequest request = RandomAttend();
  std::vector<float> values = FloatsOf(request.value());
  values[3] = std::nanf("");
  *request.mutable_value() = TensorOf({2, 3, 7, 4}, values);
  const absl::StatusOr<AttendInputs> in =
      PlaceAttendInputs(PlanOf(request), request, c10::Device(c10::kMeta));
  EXPECT_EQ(in.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(in.status().message(), ::testing::HasSubstr("value.data"));
}

// Finite inputs whose scores overflow float32 (q = k = 2e19, d = 1: q·k is
// 4e38) get INVALID_ARGUMENT, not an answer of NaN, from every kernel whose
// output they overflow; FAVOR+'s stabilised features stay finite.
TEST(ComputeAttendTest, ScoresThatOverflowAreRefusedNotAnsweredNaN) {
  for (const char* kernel : {"softmax", "relu", "elu+1", "trig"}) {
    SCOPED_TRACE(kernel);
    v1::AttendRequest request;
    *request.mutable_query() = TensorOf({1, 1, 2, 1}, {2e19f, 2e19f});
    *request.mutable_key() = TensorOf({1, 1, 2, 1}, {2e19f, 2e19f});
    *request.mutable_value() = TensorOf({1, 1, 2, 1}, {1.f, 2.f});
    request.set_kernel(kernel);
    request.set_num_random_features(kFeatures);
    request.set_projection_seed(kSeed);
    const absl::StatusOr<AttendPlan> plan =
        ValidateAttendRequest(request, AttendLimits());
    ASSERT_TRUE(plan.ok()) << plan.status();
    v1::AttendResponse response;
    const absl::Status status = ComputeAttend(*plan, request, "cpu", &response);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), ::testing::HasSubstr("not finite"));
  }
}

TEST(AttendRunnerTest, CreateRefusesADeviceItCannotUse) {
  EXPECT_EQ(AttendRunner::Create(nullptr, "tpu").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(AttendRunner::Create(nullptr, "cpu").ok());
  const int64_t gpus = at::hasCUDA() ? at::getNumGPUs() : 0;
  const absl::Status past_the_last =
      AttendRunner::Create(nullptr, absl::StrCat("cuda:", gpus)).status();
  EXPECT_EQ(past_the_last.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(past_the_last.message(), ::testing::HasSubstr("not available"));
}

struct AttendCase {
  const char* kernel;
  bool causal;
};

// Batch 2, 3 heads, a padded second sequence; 5 queries against 7 keys
// (causal: 7 and 7). Inputs of scale 0.5 keep trig's signed denominators
// away from zero, where two summation orders could disagree.
v1::AttendRequest RandomMaskedAttend(const AttendCase& c) {
  at::manual_seed(23);
  const int64_t queries = c.causal ? 7 : 5;
  v1::AttendRequest request;
  const auto scaled = [](std::vector<int64_t> shape) {
    const at::Tensor values = 0.5 * at::randn(shape);
    return TensorOf(
        shape, std::vector<float>(values.data_ptr<float>(),
                                  values.data_ptr<float>() + values.numel()));
  };
  *request.mutable_query() = scaled({2, 3, queries, kHeadDim});
  *request.mutable_key() = scaled({2, 3, 7, kHeadDim});
  *request.mutable_value() = RandomTensor({2, 3, 7, 4});
  request.set_kernel(c.kernel);
  request.set_causal(c.causal);
  request.set_num_random_features(kFeatures);
  request.set_projection_seed(kSeed);
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t j = 0; j < 7; ++j)
      request.add_key_padding_mask(b == 1 && j >= 4);
  }
  return request;
}

at::Tensor LibraryAttend(const v1::AttendRequest& request) {
  attention::AttentionOptions options;
  options.kernel = *attention::ParseKernel(request.kernel());
  options.causal = request.causal();
  attention::ProjectionOptions projection;
  projection.num_features = kFeatures;
  projection.head_dim = kHeadDim;
  projection.seed = kSeed;
  const at::Tensor padding =
      at::tensor(std::vector<int64_t>(request.key_padding_mask().begin(),
                                      request.key_padding_mask().end()))
          .view({2, 7})
          .to(at::kBool);
  auto out = attention::Attend(
      TensorFrom(request.query()), TensorFrom(request.key()),
      TensorFrom(request.value()), *attention::DrawProjection(projection),
      padding, options);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : at::Tensor();
}

TEST_F(FakeServiceTest, AttendOnRandomInputsIsTheLibrarysAttention) {
  Start();
  for (const char* kernel : {"softmax", "favor+", "favor++", "hyperbolic",
                             "trig", "relu", "elu+1", "exp"}) {
    for (bool causal : {false, true}) {
      const v1::AttendRequest request = RandomMaskedAttend({kernel, causal});
      v1::AttendResponse response;
      const grpc::Status status =
          CallAttend(server_->stub(), request, &response);
      ASSERT_TRUE(status.ok()) << kernel << ": " << status.error_message();
      const at::Tensor want = LibraryAttend(request);
      ASSERT_TRUE(want.defined());
      const at::Tensor got = TensorFrom(response.output());
      ASSERT_EQ(got.sizes(), want.sizes()) << kernel;
      // The same library on the same tensors: only the service's chunk
      // sizes and thread count could change a summation order.
      const double error =
          ((got - want).abs().max() / want.abs().max()).item<double>();
      std::cout << kernel << (causal ? " causal" : "")
                << ": relative error against the library " << error << "\n";
      EXPECT_LT(error, 1e-5) << kernel << (causal ? " causal" : "");
      // Non-degenerate: the padded sequence's queries see other keys than
      // the first one's, and the heads differ.
      EXPECT_GT((want[0][0] - want[0][1]).abs().max().item<double>(), 1e-2)
          << kernel;
    }
  }
}

// Where LibTorch sees a CUDA device (compiled everywhere; scripts/gpu-bench.sh
// runs it on a GPU): Attend on it equals Attend on the CPU, every kernel.
TEST(ComputeAttendTest, OnCudaItIsTheCpusAttention) {
  if (!at::hasCUDA()) GTEST_SKIP() << "LibTorch sees no CUDA device";
  for (const char* kernel : {"softmax", "favor+", "favor++", "hyperbolic",
                             "trig", "relu", "elu+1", "exp"}) {
    for (bool causal : {false, true}) {
      const v1::AttendRequest request = RandomMaskedAttend({kernel, causal});
      const AttendPlan plan = PlanOf(request);
      v1::AttendResponse on_cpu, on_cuda;
      ASSERT_TRUE(ComputeAttend(plan, request, "cpu", &on_cpu).ok());
      const absl::Status status =
          ComputeAttend(plan, request, "cuda", &on_cuda);
      ASSERT_TRUE(status.ok()) << kernel << ": " << status;
      const at::Tensor want = TensorFrom(on_cpu.output());
      const double error =
          ((TensorFrom(on_cuda.output()) - want).abs().max() /
           want.abs().max())
              .item<double>();
      EXPECT_LT(error, 1e-4) << kernel << (causal ? " causal" : "");
    }
  }
}

}  // namespace
}  // namespace favor::service
