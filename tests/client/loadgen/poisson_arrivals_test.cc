#include "client/loadgen/poisson_arrivals.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace favor::bench {
namespace {

std::vector<double> Gaps(double rate, uint64_t seed, int n) {
  PoissonArrivals arrivals(rate, seed);
  std::vector<double> gaps;
  double previous = 0;
  for (int i = 0; i < n; ++i) {
    const double at = absl::ToDoubleSeconds(arrivals.Next());
    gaps.push_back(at - previous);
    previous = at;
  }
  return gaps;
}

TEST(PoissonArrivalsTest, GapsAreExponentialWithTheRate) {
  const int n = 50000;
  const std::vector<double> gaps = Gaps(200.0, 11, n);
  double mean = 0;
  for (double gap : gaps) {
    ASSERT_GE(gap, 0);
    mean += gap;
  }
  mean /= n;
  double variance = 0;
  for (double gap : gaps) variance += (gap - mean) * (gap - mean);
  variance /= n - 1;
  EXPECT_NEAR(mean, 1.0 / 200, 0.05 / 200);
  // An exponential's standard deviation equals its mean.
  EXPECT_NEAR(std::sqrt(variance) / mean, 1.0, 0.05);
  // P(gap > mean) = e^-1.
  int longer = 0;
  for (double gap : gaps) longer += gap > 1.0 / 200;
  EXPECT_NEAR(static_cast<double>(longer) / n, std::exp(-1.0), 0.01);
}

TEST(PoissonArrivalsTest, CountsInAWindowArePoisson) {
  // 10 calls/s over 2000 one-second windows: mean and variance 10.
  PoissonArrivals arrivals(10.0, 5);
  std::vector<int> counts(2000, 0);
  for (;;) {
    const double at = absl::ToDoubleSeconds(arrivals.Next());
    if (at >= 2000) break;
    ++counts[static_cast<size_t>(at)];
  }
  double mean = 0;
  for (int count : counts) mean += count;
  mean /= counts.size();
  double variance = 0;
  for (int count : counts) variance += (count - mean) * (count - mean);
  variance /= counts.size() - 1;
  EXPECT_NEAR(mean, 10, 0.3);
  EXPECT_NEAR(variance, 10, 1.0);
}

TEST(PoissonArrivalsTest, SameSeedSameTimes) {
  EXPECT_EQ(Gaps(50, 9, 100), Gaps(50, 9, 100));
  EXPECT_NE(Gaps(50, 9, 100), Gaps(50, 10, 100));
}

}  // namespace
}  // namespace favor::bench
