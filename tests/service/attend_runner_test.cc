// ComputeAttend's choice of projection: a seeded request draws exactly the
// matrix the attention library draws for its random_features, and the
// three kinds give three different attentions on non-degenerate inputs.
#include "server/service/attend_runner.h"

#include <ATen/ATen.h>

#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/attention/projection.h"
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
  const absl::Status status = ComputeAttend(*plan, request, &response);
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

}  // namespace
}  // namespace favor::service
