#include "server/attention/cpu_rows_avx2.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace favor::attention::cpu {
namespace {

#ifdef FAVOR_X86_TARGETS

// The loops run wherever the processor has AVX2 and FMA (RowsOnAvx2() only
// says whether cpu_kernels.cc picks them), so they are checked here on
// AVX-512 machines too.
bool HasAvx2() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

// Column counts: FAVOR+'s 256, one 16-float step, one 8-float half, and
// tails of every kind.
constexpr int64_t kCols[] = {256, 16, 8, 37, 23, 5, 0};

std::vector<float> Uniform(int64_t n, float low, float high, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(low, high);
  std::vector<float> x(n);
  for (float& v : x) v = uniform(rng);
  return x;
}

// exp's relative error (cpu_kernels.h) plus the rounding of its float
// argument, as cpu_kernels_test.cc bounds them.
double ExpTolerance(double want, double argument) {
  return (4e-7 + std::abs(argument) * 6e-8) * want;
}

TEST(CpuRowsAvx2Test, RowExpWithAndWithoutColumnSums) {
  if (!HasAvx2()) GTEST_SKIP() << "this processor has no AVX2 and FMA";
  for (int64_t cols : kCols) {
    const std::vector<float> row0 = Uniform(cols, -80.0f, 0.0f, cols + 1);
    const float offset = -3.5f, epsilon = 1e-3f;
    std::vector<float> row = row0;
    RowExpAvx2(row.data(), cols, offset, epsilon, nullptr);
    std::vector<float> summed = row0, sums(cols, 0.5f);
    RowExpAvx2(summed.data(), cols, offset, epsilon, sums.data());
    for (int64_t c = 0; c < cols; ++c) {
      const double argument = double{row0[c]} - offset;
      const double want = std::exp(argument);
      const double tolerance = ExpTolerance(want, argument);
      // Plus the rounding of the sum with epsilon.
      EXPECT_NEAR(row[c], want + epsilon, tolerance + 6e-8 * (want + epsilon))
          << cols << " " << c;
      EXPECT_NEAR(summed[c], want, tolerance) << cols << " " << c;
      EXPECT_NEAR(sums[c], 0.5 + want, tolerance + 1e-7) << cols << " " << c;
    }
  }
}

TEST(CpuRowsAvx2Test, MapRowAndMaxFindsTheMaxAnywhere) {
  if (!HasAvx2()) GTEST_SKIP() << "this processor has no AVX2 and FMA";
  for (int64_t cols : kCols) {
    if (cols == 0) continue;
    const std::vector<float> bias = Uniform(cols, -1.0f, 1.0f, 7);
    // The max placed in every column in turn (each lane, each half of a
    // 16-float step and the scalar tail).
    for (int64_t at = 0; at < cols; ++at) {
      std::vector<float> row = Uniform(cols, -10.0f, 10.0f, cols + at);
      row[at] = 50.0f;
      std::vector<float> plain = row;
      EXPECT_EQ(MapRowAndMaxAvx2(plain.data(), cols, {}), 50.0f)
          << cols << " " << at;
      EXPECT_EQ(plain, row) << "the identity map leaves the row as it is";
      std::vector<float> mapped = row;
      const float got =
          MapRowAndMaxAvx2(mapped.data(), cols, {0.5f, bias.data()});
      float want = -INFINITY;
      for (int64_t c = 0; c < cols; ++c) {
        const float m = std::fma(row[c], 0.5f, bias[c]);
        EXPECT_NEAR(mapped[c], m, 1e-6f * (1 + std::abs(m)));
        want = std::max(want, mapped[c]);
      }
      EXPECT_EQ(got, want) << cols << " " << at;
    }
  }
}

TEST(CpuRowsAvx2Test, RowDotMatchesDoubleSum) {
  if (!HasAvx2()) GTEST_SKIP() << "this processor has no AVX2 and FMA";
  for (int64_t cols : kCols) {
    const std::vector<float> a = Uniform(cols, -2.0f, 2.0f, 11);
    const std::vector<float> b = Uniform(cols, -2.0f, 2.0f, 13);
    double want = 0, scale = 0;
    for (int64_t c = 0; c < cols; ++c) {
      want += double{a[c]} * b[c];
      scale += std::abs(double{a[c]} * b[c]);
    }
    EXPECT_NEAR(RowDotAvx2(a.data(), b.data(), cols), want,
                1e-6 * scale + 1e-30)
        << cols;
  }
}

TEST(CpuRowsAvx2Test, RowExpDotIsTheRowExpAndItsDot) {
  if (!HasAvx2()) GTEST_SKIP() << "this processor has no AVX2 and FMA";
  for (int64_t cols : kCols) {
    const std::vector<float> row0 = Uniform(cols, -40.0f, 0.0f, cols + 3);
    const std::vector<float> z = Uniform(cols, 0.0f, 3.0f, cols + 5);
    const float offset = -2.0f, epsilon = 1e-4f;
    std::vector<float> row = row0;
    const float dot =
        RowExpDotAvx2(row.data(), cols, offset, epsilon, z.data());
    double want_dot = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double argument = double{row0[c]} - offset;
      const double want = std::exp(argument) + epsilon;
      EXPECT_NEAR(row[c], want, ExpTolerance(want, argument) + 6e-8 * want)
          << cols << " " << c;
      want_dot += want * z[c];
    }
    EXPECT_NEAR(dot, want_dot, 1e-5 * want_dot + 1e-30) << cols;
  }
}

#else

TEST(CpuRowsAvx2Test, NotCompiledHere) {
  GTEST_SKIP() << "the AVX2 row loops are compiled for x86-64 with GCC only";
}

#endif

}  // namespace
}  // namespace favor::attention::cpu
