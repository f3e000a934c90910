#include "server/attention/philox.h"

#include <gtest/gtest.h>

#include <cmath>

namespace favor::attention {
namespace {

// Known-answer vectors published with Random123 (kat_vectors, philox4x32_10).
TEST(PhiloxTest, MatchesPublishedKnownAnswers) {
  EXPECT_EQ(Philox4x32({0, 0, 0, 0}, 0),
            (PhiloxBlock{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(Philox4x32({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                       0xffffffffffffffffull),
            (PhiloxBlock{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(Philox4x32({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                       0x299f31d0a4093822ull),
            (PhiloxBlock{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(GaussianStreamTest, HasStandardNormalMoments) {
  GaussianStream stream(42, 7);
  const int n = 200000;
  double sum = 0, sum_sq = 0, sum_4 = 0;
  for (int i = 0; i < n; ++i) {
    const double x = stream.Next();
    sum += x;
    sum_sq += x * x;
    sum_4 += x * x * x * x;
  }
  // Standard errors at n = 2e5: mean 0.0022, variance 0.0032, 4th moment
  // 0.024; the bounds are about five of them.
  EXPECT_NEAR(sum / n, 0.0, 0.011);
  EXPECT_NEAR(sum_sq / n, 1.0, 0.016);
  EXPECT_NEAR(sum_4 / n, 3.0, 0.12);
}

TEST(GaussianStreamTest, IsAPureFunctionOfSeedAndStream) {
  GaussianStream a(1, 2), b(1, 2), c(1, 3), d(2, 2);
  for (int i = 0; i < 10; ++i) {
    const double x = a.Next();
    EXPECT_EQ(x, b.Next());
    EXPECT_NE(x, c.Next());
    EXPECT_NE(x, d.Next());
  }
}

}  // namespace
}  // namespace favor::attention
