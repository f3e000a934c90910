// The tiles' GELU (cpu_gelu.h) against x·Φ(x) in double, and its 16-lane
// form against the scalar one, bit for bit.
#include "server/attention/cpu_gelu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "server/attention/cpu_features.h"

namespace favor::attention::cpu {
namespace {

double GeluInDouble(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

// Every float from −12 to 12 in steps of 2⁻¹², the intervals' edges and
// their neighbours, and random normal values of several scales.
std::vector<float> Arguments() {
  std::vector<float> xs;
  for (int i = -12 * 4096; i <= 12 * 4096; ++i) xs.push_back(i / 4096.0f);
  for (int i = 0; i <= kGeluIntervals; ++i) {
    const float edge = -kGeluLimit + i * (2 * kGeluLimit / kGeluIntervals);
    xs.push_back(edge);
    xs.push_back(std::nextafter(edge, -100.0f));
    xs.push_back(std::nextafter(edge, 100.0f));
  }
  std::mt19937 rng(5);
  for (float scale : {1e-6f, 0.1f, 1.0f, 3.0f, 30.0f}) {
    std::normal_distribution<float> normal(0.0f, scale);
    for (int i = 0; i < 20000; ++i) xs.push_back(normal(rng));
  }
  return xs;
}

// About one ulp of the result, and 1e-8 absolute near zero (where x·Φ(x)
// is tiny). The fit's worst case is 4.5e-7 at x ≈ 4.09.
TEST(CpuGeluTest, MatchesXPhiXInDouble) {
  for (float x : Arguments()) {
    const double want = GeluInDouble(x);
    const float got = GeluScalar(x);
    ASSERT_NEAR(got, want, 1.6e-7 * (1.0 + std::abs(x))) << "x = " << x;
  }
}

TEST(CpuGeluTest, TailsAndSpecialValues) {
  EXPECT_EQ(GeluScalar(0.0f), 0.0f);
  EXPECT_EQ(GeluScalar(-6.5f), 0.0f);
  EXPECT_EQ(GeluScalar(-1e30f), 0.0f);
  EXPECT_EQ(GeluScalar(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(GeluScalar(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(GeluScalar(std::nanf(""))));
  for (float x : {6.0f, 7.5f, 100.0f, 1e20f}) {
    EXPECT_NEAR(GeluScalar(x), x, 1e-7 * x) << x;
  }
  // The smallest argument that is not cut to 0 is −6 itself, which the
  // first interval's quartic reads within 1e-8 of Φ(−6).
  EXPECT_NEAR(GeluScalar(-6.0f), GeluInDouble(-6.0), 6e-8);
}

#ifdef FAVOR_X86_TARGETS
__attribute__((target("avx512f"))) void Gelu16Over(const float* in, float* out,
                                                   size_t n) {
  for (size_t i = 0; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(out + i, Gelu16(_mm512_loadu_ps(in + i)));
  }
}
#endif

TEST(CpuGeluTest, SixteenLanesAreTheScalarBits) {
#ifdef FAVOR_X86_TARGETS
  if (!DetectedCpuFeatures().avx512f) {
    GTEST_SKIP() << "this CPU has no AVX-512 (FAVOR_CPU_ISA may cap it)";
  }
  std::vector<float> xs = Arguments();
  for (float x : {0.0f, -0.0f, -6.5f, -1e30f, 1e20f, std::nanf(""),
                  std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity()}) {
    xs.push_back(x);
  }
  xs.resize(xs.size() / 16 * 16 + 16, 1.0f);
  std::vector<float> got(xs.size());
  Gelu16Over(xs.data(), got.data(), xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const float want = GeluScalar(xs[i]);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got[i])) << "x = " << xs[i];
      continue;
    }
    ASSERT_EQ(std::memcmp(&got[i], &want, sizeof(float)), 0)
        << "x = " << xs[i] << ": " << got[i] << " against " << want;
  }
#else
  GTEST_SKIP() << "x86-64 with GCC only";
#endif
}

}  // namespace
}  // namespace favor::attention::cpu
