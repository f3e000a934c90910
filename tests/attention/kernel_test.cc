#include "server/attention/kernel.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace favor::attention {
namespace {

TEST(KernelTest, NamesRoundTrip) {
  for (Kernel kernel :
       {Kernel::kSoftmaxExact, Kernel::kFavorPositive, Kernel::kFavorPlusPlus,
        Kernel::kFavorHyperbolic, Kernel::kTrigonometric, Kernel::kRelu,
        Kernel::kEluPlusOne, Kernel::kExp}) {
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
  EXPECT_EQ(FeatureCount(Kernel::kFavorPlusPlus, 256, 64), 256);
  EXPECT_EQ(FeatureCount(Kernel::kFavorHyperbolic, 256, 64), 512);
  EXPECT_EQ(FeatureCount(Kernel::kTrigonometric, 256, 64), 512);
  EXPECT_EQ(FeatureCount(Kernel::kEluPlusOne, 256, 64), 64);
  EXPECT_TRUE(TraitsOf(Kernel::kFavorPositive).positive);
  EXPECT_FALSE(TraitsOf(Kernel::kTrigonometric).positive);
}

TEST(KernelTest, FavorPlusPlusIsNamedAndHasFavorPlusTraits) {
  EXPECT_EQ(KernelName(Kernel::kFavorPlusPlus), "favor++");
  const KernelTraits plus = TraitsOf(Kernel::kFavorPositive);
  const KernelTraits plus_plus = TraitsOf(Kernel::kFavorPlusPlus);
  EXPECT_TRUE(plus_plus.uses_projection);
  EXPECT_EQ(plus_plus.positive, plus.positive);
  EXPECT_EQ(plus_plus.adds_epsilon, plus.adds_epsilon);
  EXPECT_EQ(plus_plus.key_shift, plus.key_shift);
}

}  // namespace
}  // namespace favor::attention
