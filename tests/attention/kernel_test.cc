#include "server/attention/kernel.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace favor::attention {
namespace {

TEST(KernelTest, NamesRoundTrip) {
  for (Kernel kernel : {Kernel::kSoftmaxExact, Kernel::kFavorPositive,
                        Kernel::kFavorHyperbolic, Kernel::kTrigonometric,
                        Kernel::kRelu, Kernel::kEluPlusOne, Kernel::kExp}) {
    auto parsed = ParseKernel(KernelName(kernel));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, kernel);
  }
}

TEST(KernelTest, UnknownNameListsTheKnownOnes) {
  auto parsed = ParseKernel("favour");
  ASSERT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parsed.status().message(), testing::HasSubstr("'favour'"));
  EXPECT_THAT(parsed.status().message(), testing::HasSubstr("favor+"));
}

TEST(KernelTest, FeatureCounts) {
  EXPECT_EQ(FeatureCount(Kernel::kFavorPositive, 256, 64), 256);
  EXPECT_EQ(FeatureCount(Kernel::kFavorHyperbolic, 256, 64), 512);
  EXPECT_EQ(FeatureCount(Kernel::kTrigonometric, 256, 64), 512);
  EXPECT_EQ(FeatureCount(Kernel::kEluPlusOne, 256, 64), 64);
  EXPECT_TRUE(TraitsOf(Kernel::kFavorPositive).positive);
  EXPECT_FALSE(TraitsOf(Kernel::kTrigonometric).positive);
}

}  // namespace
}  // namespace favor::attention
