#include "server/attention/kernel.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

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

TEST(KernelTest, TheTableHasOneRowPerKernelWithADistinctName) {
  ASSERT_EQ(AllKernels().size(), static_cast<size_t>(kNumKernels));
  std::set<std::string> names;
  for (int i = 0; i < kNumKernels; ++i) {
    const KernelTraits& row = AllKernels()[i];
    EXPECT_EQ(static_cast<int>(row.kernel), i);
    EXPECT_EQ(&TraitsOf(row.kernel), &row);
    EXPECT_FALSE(row.name.empty());
    names.insert(std::string(row.name));
  }
  EXPECT_EQ(names.size(), AllKernels().size());
  EXPECT_EQ(KernelNames(),
            "softmax, favor+, favor++, hyperbolic, trig, relu, elu+1, exp");
}

TEST(KernelTest, AKernelWithAProjectionCountsItsFeaturesPerRow) {
  for (const KernelTraits& row : AllKernels()) {
    EXPECT_EQ(row.uses_projection, row.features_per_projection_row > 0)
        << row.name;
    if (!row.uses_projection) {
      EXPECT_EQ(FeatureCount(row.kernel, 256, 64), 64) << row.name;
    }
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
