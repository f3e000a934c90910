// ValidateAttendRequest's resolution of what a request leaves out: the
// defaults the proto documents (kernel favor+, 256 random features) and the
// cost the Attend batcher counts. The checks that refuse a request are
// tested through the service (favor_service_test.cc).
#include "server/service/attend_validation.h"

#include <vector>

#include "gtest/gtest.h"
#include "tests/service/fake_service_fixture.h"

namespace favor::service {
namespace {

// Batch 2, 3 heads, 5 queries against 7 keys of head size 4, values of 6.
v1::AttendRequest Unset() {
  v1::AttendRequest request;
  *request.mutable_query() =
      TensorOf({2, 3, 5, 4}, std::vector<float>(2 * 3 * 5 * 4, 0.5f));
  *request.mutable_key() =
      TensorOf({2, 3, 7, 4}, std::vector<float>(2 * 3 * 7 * 4, 0.5f));
  *request.mutable_value() =
      TensorOf({2, 3, 7, 6}, std::vector<float>(2 * 3 * 7 * 6, 0.5f));
  return request;
}

TEST(AttendValidationTest, UnsetKernelAndFeaturesAreFavorPlusWith256) {
  const absl::StatusOr<AttendPlan> plan =
      ValidateAttendRequest(Unset(), AttendLimits());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->kernel, attention::Kernel::kFavorPositive);
  EXPECT_EQ(plan->num_random_features, 256);
}

TEST(AttendValidationTest, GivenKernelAndFeaturesAreKept) {
  v1::AttendRequest request = Unset();
  request.set_kernel("relu");
  request.set_num_random_features(24);
  const absl::StatusOr<AttendPlan> plan =
      ValidateAttendRequest(request, AttendLimits());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->kernel, attention::Kernel::kRelu);
  EXPECT_EQ(plan->num_random_features, 24);
}

TEST(AttendValidationTest, PlanHasTheShapesAndCostsQueriesPlusKeys) {
  const absl::StatusOr<AttendPlan> plan =
      ValidateAttendRequest(Unset(), AttendLimits());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->batch, 2);
  EXPECT_EQ(plan->heads, 3);
  EXPECT_EQ(plan->query_length, 5);
  EXPECT_EQ(plan->key_length, 7);
  EXPECT_EQ(plan->head_dim, 4);
  EXPECT_EQ(plan->value_dim, 6);
  EXPECT_EQ(plan->cost_tokens, 2 * (5 + 7));
}

}  // namespace
}  // namespace favor::service
