#include "client/loadgen/length_distribution.h"

#include <cmath>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::bench {
namespace {

using ::testing::HasSubstr;

TEST(LengthDistributionTest, FixedAlwaysGivesItsLength) {
  auto lengths = LengthDistribution::Parse("fixed:512");
  ASSERT_TRUE(lengths.ok()) << lengths.status();
  Random random(1);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(lengths->Sample(random), 512);
  EXPECT_EQ(lengths->max_tokens(), 512);
  EXPECT_EQ(lengths->ToString(), "fixed:512");
}

TEST(LengthDistributionTest, UniformCoversItsRangeEvenly) {
  auto lengths = LengthDistribution::Parse("uniform:10:13");
  ASSERT_TRUE(lengths.ok()) << lengths.status();
  Random random(7);
  std::vector<int> counts(4, 0);
  for (int i = 0; i < 40000; ++i) {
    const int64_t length = lengths->Sample(random);
    ASSERT_GE(length, 10);
    ASSERT_LE(length, 13);
    ++counts[length - 10];
  }
  for (int count : counts) EXPECT_NEAR(count, 10000, 400);  // > 4 sigma
}

TEST(LengthDistributionTest, LogNormalHasItsMedianAndSpread) {
  auto lengths = LengthDistribution::Parse("lognormal:1000:0.5");
  ASSERT_TRUE(lengths.ok()) << lengths.status();
  Random random(3);
  std::vector<double> logs;
  int below_median = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const int64_t length = lengths->Sample(random);
    ASSERT_GE(length, 1);
    if (length < 1000) ++below_median;
    logs.push_back(std::log(static_cast<double>(length)));
  }
  double mean = 0;
  for (double x : logs) mean += x;
  mean /= n;
  double variance = 0;
  for (double x : logs) variance += (x - mean) * (x - mean);
  variance /= n - 1;
  EXPECT_NEAR(mean, std::log(1000.0), 0.02);
  EXPECT_NEAR(std::sqrt(variance), 0.5, 0.02);
  EXPECT_NEAR(below_median, n / 2, 400);
}

TEST(LengthDistributionTest, SameSeedSameLengths) {
  auto lengths = LengthDistribution::Parse("lognormal:64:1");
  ASSERT_TRUE(lengths.ok());
  Random a(42);
  Random b(42);
  Random c(43);
  int differences = 0;
  for (int i = 0; i < 100; ++i) {
    const int64_t x = lengths->Sample(a);
    EXPECT_EQ(x, lengths->Sample(b));
    differences += x != lengths->Sample(c);
  }
  EXPECT_GT(differences, 50);
}

TEST(LengthDistributionTest, CapClampsLogNormalAndLowersUniform) {
  auto lognormal = LengthDistribution::Parse("lognormal:1000:2");
  ASSERT_TRUE(lognormal.ok());
  auto capped = lognormal->CappedAt(1500);
  ASSERT_TRUE(capped.ok()) << capped.status();
  EXPECT_EQ(capped->max_tokens(), 1500);
  EXPECT_EQ(capped->ToString(), "lognormal:1000:2,max=1500");
  Random random(5);
  int at_cap = 0;
  for (int i = 0; i < 1000; ++i) {
    const int64_t length = capped->Sample(random);
    ASSERT_LE(length, 1500);
    at_cap += length == 1500;
  }
  EXPECT_GT(at_cap, 300);  // P(draw > 1.5 median) with sigma 2 is ~0.42

  auto uniform = LengthDistribution::Parse("uniform:1:100");
  ASSERT_TRUE(uniform.ok());
  auto lowered = uniform->CappedAt(50);
  ASSERT_TRUE(lowered.ok());
  EXPECT_EQ(lowered->ToString(), "uniform:1:50");
}

TEST(LengthDistributionTest, CapBelowTheSmallestLengthIsRefused) {
  auto fixed = LengthDistribution::Parse("fixed:4096");
  ASSERT_TRUE(fixed.ok());
  auto capped = fixed->CappedAt(1024);
  EXPECT_EQ(capped.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(capped.status().message(), HasSubstr("over the cap of 1024"));
  EXPECT_THAT(std::string(capped.status().message()), HasSubstr("4096"));
}

TEST(LengthDistributionTest, BadSpecsAreRefused) {
  for (const char* spec :
       {"", "fixed", "fixed:0", "fixed:-3", "fixed:x", "uniform:5",
        "uniform:9:3", "uniform:0:3", "lognormal:0:1", "lognormal:10:-1",
        "lognormal:10", "gamma:1:2", "fixed:5:6"}) {
    auto lengths = LengthDistribution::Parse(spec);
    EXPECT_EQ(lengths.status().code(), absl::StatusCode::kInvalidArgument)
        << spec;
    EXPECT_THAT(lengths.status().message(), HasSubstr("fixed:N")) << spec;
  }
}

}  // namespace
}  // namespace favor::bench
