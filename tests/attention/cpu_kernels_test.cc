#include "server/attention/cpu_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace favor::attention::cpu {
namespace {

// The kernels' exp: relative error below 4e-7 (cpu_kernels.h). A result
// computed from a float argument a = fl(x − offset) also carries that
// argument's rounding, |a| · 2^-24 per rounding, which the bounds below
// add.
constexpr double kExpRelativeError = 4e-7;
constexpr double kRounding = 6e-8;

TEST(CpuKernelsTest, ExpMatchesStdExpOverItsRange) {
  std::vector<float> x, y;
  for (double v = -87.0; v <= 88.0; v += 0.0137)
    x.push_back(static_cast<float>(v));
  y.resize(x.size());
  Exp(x.data(), y.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(static_cast<double>(x[i]));
    ASSERT_NEAR(y[i], want, kExpRelativeError * want) << "x = " << x[i];
  }
}

TEST(CpuKernelsTest, ExpOfVeryNegativeArgumentsIsZero) {
  const float x[] = {-88.0f, -1000.0f, -std::numeric_limits<float>::infinity()};
  float y[3];
  Exp(x, y, 3);
  for (float v : y) EXPECT_EQ(v, 0.0f);
}

// Rows of `cols` logits spread over [−spread, spread].
std::vector<float> RandomRows(int64_t rows, int64_t cols, float spread,
                              uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-spread, spread);
  std::vector<float> u(rows * cols);
  for (float& v : u) v = uniform(rng);
  return u;
}

TEST(CpuKernelsTest, QueryFeaturesWithDotMatchesDoubleComputation) {
  // 256 columns as FAVOR+ has them, and 37 for the masked tail.
  for (int64_t cols : {256, 37}) {
    const int64_t rows = 9;
    const float epsilon = 1e-4f;
    const std::vector<float> u0 = RandomRows(rows, cols, 60.0f, cols);
    std::vector<float> u = u0, h(rows), z(cols), dot(rows);
    for (int64_t i = 0; i < rows; ++i) h[i] = 0.25f * i;
    for (int64_t c = 0; c < cols; ++c) z[c] = 1.0f + 0.01f * c;
    QueryFeaturesWithDot(u.data(), h.data(), rows, cols, epsilon, z.data(),
                         dot.data());
    for (int64_t i = 0; i < rows; ++i) {
      const float* row = u0.data() + i * cols;
      const float max = *std::max_element(row, row + cols);
      double want_dot = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const double arg = static_cast<double>(row[c]) -
                           static_cast<double>(h[i]) - static_cast<double>(max);
        const double want = std::exp(std::max(arg, -87.0)) + epsilon;
        const double bound =
            (kExpRelativeError + 3 * kRounding * std::abs(arg)) * want;
        ASSERT_NEAR(u[i * cols + c], want, bound) << i << "," << c;
        want_dot += want * z[c];
      }
      EXPECT_NEAR(dot[i], want_dot, 1e-5 * want_dot) << "row " << i;
    }
  }
}

// The vectorised exp inside the feature loops, densely over the arguments
// query features meet: one row whose max is 0, so that each feature is
// exp(x) + ε of its own logit x.
TEST(CpuKernelsTest, QueryFeaturesExpOverItsRange) {
  std::vector<float> u;
  for (double v = -86.0; v <= 0.0; v += 0.0013)
    u.push_back(static_cast<float>(v));
  u.push_back(0.0f);
  const std::vector<float> u0 = u;
  const int64_t cols = static_cast<int64_t>(u.size());
  const std::vector<float> z(cols, 0.0f);
  float h = 0.0f, dot = 0.0f;
  QueryFeaturesWithDot(u.data(), &h, 1, cols, 0.0f, z.data(), &dot);
  for (int64_t c = 0; c < cols; ++c) {
    const double want = std::exp(static_cast<double>(u0[c]));
    ASSERT_NEAR(u[c], want, kExpRelativeError * want) << "x = " << u0[c];
  }
}

// Rows whose maxima climb by more than kMaxShiftGap force the shift up
// mid-way; the rows already done and the column sums are rescaled, so the
// result is as if the final shift had been used from the start.
TEST(CpuKernelsTest, ExpWithRunningShiftRescalesWhatWasDone) {
  const int64_t rows = 6, cols = 40;
  std::vector<float> u0 = RandomRows(rows, cols, 5.0f, 3);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t c = 0; c < cols; ++c) u0[i * cols + c] += 50.0f * i;
  }
  const uint8_t keep[rows] = {1, 1, 0, 1, 1, 1};
  std::vector<float> u = u0, h(rows, 0.5f), sums(cols, 0.0f);
  float shift = -1e30f;  // FeatureContext::kEmptyShift's role: none yet
  const float max = ExpWithRunningShift(u.data(), h.data(), keep, &shift, rows,
                                        cols, sums.data(), -1e30f);
  float want_max = -1e30f;
  for (int64_t i = 0; i < rows; ++i) {
    if (!keep[i]) continue;
    for (int64_t c = 0; c < cols; ++c) {
      want_max = std::max(want_max, u0[i * cols + c]);
    }
  }
  EXPECT_EQ(max, want_max);
  EXPECT_GE(shift, want_max - kMaxShiftGap);
  std::vector<double> want_sums(cols, 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t c = 0; c < cols; ++c) {
      const float got = u[i * cols + c];
      if (!keep[i]) {
        ASSERT_EQ(got, 0.0f) << "masked row " << i;
        continue;
      }
      const double arg = static_cast<double>(u0[i * cols + c]) - 0.5 -
                         static_cast<double>(shift);
      const double want = std::exp(std::max(arg, -87.0));
      // Rows rescaled once more carry one more rounding. A rescale by a
      // factor below e^-87 flushes a row to 0: its values were at most
      // e^(kMaxShiftGap - 87) ≈ 1e-10 of the largest feature (about 1 after
      // the final shift), below fp32's resolution of the sums they join.
      const double bound =
          (2 * kExpRelativeError + 3 * kRounding * std::abs(arg)) * want +
          std::exp(static_cast<double>(kMaxShiftGap) - 87.0);
      ASSERT_NEAR(got, want, bound) << i << "," << c;
      want_sums[c] += want;
    }
  }
  for (int64_t c = 0; c < cols; ++c) {
    EXPECT_NEAR(sums[c], want_sums[c], 1e-5 * want_sums[c]) << "column " << c;
  }
}

TEST(CpuKernelsTest, ExpWithRunningShiftOfOnlyMaskedRowsIsEmpty) {
  std::vector<float> u(8, 3.0f), h(2, 0.0f), sums(4, 0.0f);
  const uint8_t keep[2] = {0, 0};
  float shift = -1e30f;
  EXPECT_EQ(ExpWithRunningShift(u.data(), h.data(), keep, &shift, 2, 4,
                                sums.data(), -7.0f),
            -7.0f);
  for (float v : u) EXPECT_EQ(v, 0.0f);
  for (float v : sums) EXPECT_EQ(v, 0.0f);
}

// One block of exact softmax's online update against the same in double:
// 37 keys × 21 queries (a partial vector of queries), some scores masked
// (−∞), two queries every key is hidden from (one with a running maximum,
// one with none yet: its shift must be 0, not −∞), queries starting from a
// running state (a maximum the block raises, one it does not, none yet).
TEST(CpuKernelsTest, SoftmaxColumnsStepIsTheOnlineSoftmaxUpdate) {
  constexpr int64_t kRows = 37, kCols = 21;
  constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  std::vector<float> scores(kRows * kCols);
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = 0; c < kCols; ++c) {
      const bool hidden = c == 5 || c == 6 || (r + c) % 7 == 0;
      scores[r * kCols + c] = hidden ? kMinusInf : normal(rng);
    }
  }
  std::vector<float> max(kCols), sum(kCols), correction(kCols), shift(kCols);
  for (int64_t c = 0; c < kCols; ++c) {
    max[c] = c % 3 == 0 ? kMinusInf : (c % 3 == 1 ? -30.0f : 30.0f);
    sum[c] = c % 3 == 0 ? 0.0f : 2.5f;
  }
  const std::vector<float> before = scores, old_max = max, old_sum = sum;
  SoftmaxColumnsStep(scores.data(), kRows, kCols, max.data(), sum.data(),
                     correction.data(), shift.data());
  for (int64_t c = 0; c < kCols; ++c) {
    double top = old_max[c];
    for (int64_t r = 0; r < kRows; ++r) {
      top = std::max(top, static_cast<double>(before[r * kCols + c]));
    }
    ASSERT_EQ(max[c], static_cast<float>(top)) << "query " << c;
    const double s = std::isinf(top) ? 0.0 : top;
    // exp's own error, the rounding of its float argument, and (for the
    // sum) the float additions.
    // (Masked scores give exactly 0.)
    const auto bound = [](double argument, double value) {
      if (value == 0.0) return 0.0;
      return (kExpRelativeError + std::abs(argument) * kRounding) * value;
    };
    const double old_argument = static_cast<double>(old_max[c]) - s;
    const double corr = std::exp(old_argument);
    EXPECT_NEAR(correction[c], corr, bound(old_argument, corr))
        << "query " << c;
    double total = old_sum[c] * corr;
    double total_bound = old_sum[c] * bound(old_argument, corr);
    for (int64_t r = 0; r < kRows; ++r) {
      const double argument = static_cast<double>(before[r * kCols + c]) - s;
      const double e = std::exp(argument);
      EXPECT_NEAR(scores[r * kCols + c], e, bound(argument, e))
          << "key " << r << ", query " << c;
      total += e;
      total_bound += bound(argument, e);
    }
    EXPECT_NEAR(sum[c], total, total_bound + kRows * kRounding * total)
        << "query " << c;
  }
  // The queries no key reaches keep their maximum and add nothing; the one
  // with none yet stays empty.
  EXPECT_EQ(max[5], old_max[5]);
  EXPECT_EQ(max[6], kMinusInf);
  EXPECT_EQ(sum[6], 0.0f);
  for (int64_t r = 0; r < kRows; ++r) {
    EXPECT_EQ(scores[r * kCols + 5], 0.0f);
    EXPECT_EQ(scores[r * kCols + 6], 0.0f);
  }
}

// Scores that overflowed float32 (+∞) make their query's shift +∞ and so
// ∞ − ∞ = NaN: the step must keep that NaN (the service refuses a NaN
// answer) rather than turn it into a probability, on every ISA.
TEST(CpuKernelsTest, SoftmaxColumnsStepKeepsTheNaNOfOverflowedScores) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  // 2 keys × 17 queries (a full vector and one more): query 3 and query 16
  // each have an infinite score.
  constexpr int64_t kRows = 2, kCols = 17;
  std::vector<float> scores(kRows * kCols, 1.0f);
  scores[0 * kCols + 3] = kInf;
  scores[1 * kCols + 16] = kInf;
  std::vector<float> max(kCols, -kInf), sum(kCols, 0.0f), correction(kCols),
      shift(kCols);
  SoftmaxColumnsStep(scores.data(), kRows, kCols, max.data(), sum.data(),
                     correction.data(), shift.data());
  for (int64_t c = 0; c < kCols; ++c) {
    if (c == 3 || c == 16) {
      EXPECT_TRUE(std::isnan(sum[c])) << "query " << c << ": " << sum[c];
    } else {
      EXPECT_FLOAT_EQ(sum[c], 2.0f) << "query " << c;
    }
  }
}

TEST(CpuKernelsTest, RowSquaredNormsAndDivideRows) {
  const int64_t rows = 3, cols = 21, stride = 24;
  std::vector<float> x = RandomRows(rows, stride, 2.0f, 5), h(rows);
  RowSquaredNorms(x.data(), rows, cols, stride, 0.5f, h.data());
  for (int64_t i = 0; i < rows; ++i) {
    double want = 0;
    for (int64_t c = 0; c < cols; ++c) {
      want += static_cast<double>(x[i * stride + c]) * x[i * stride + c];
    }
    EXPECT_NEAR(h[i], 0.5 * want, 1e-6 * want);
  }
  const float den[rows] = {2.0f, 0.0f, -4.0f};
  std::vector<float> out(rows * stride, 9.0f);
  DivideRows(x.data(), den, rows, cols, out.data(), stride);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t c = 0; c < stride; ++c) {
      const float want = c >= cols     ? 9.0f  // untouched
                         : den[i] == 0 ? 0.0f  // no key to attend to
                                       : x[i * cols + c] / den[i];
      EXPECT_FLOAT_EQ(out[i * stride + c], want) << i << "," << c;
    }
  }
}

TEST(CpuKernelsTest, AddKeptRowsSumsKeptRowsAndCountsThem) {
  const int64_t rows = 5, cols = 19, stride = 23;
  const std::vector<float> x = RandomRows(rows, stride, 3.0f, 8);
  const uint8_t keep[rows] = {1, 0, 1, 1, 0};
  for (const uint8_t* mask : {static_cast<const uint8_t*>(keep),
                              static_cast<const uint8_t*>(nullptr)}) {
    std::vector<float> sums(cols + 1, 1.0f);
    AddKeptRows(x.data(), rows, cols, stride, mask, sums.data());
    double count = 1;
    std::vector<double> want(cols, 1.0);
    for (int64_t i = 0; i < rows; ++i) {
      if (mask != nullptr && !mask[i]) continue;
      ++count;
      for (int64_t c = 0; c < cols; ++c) want[c] += x[i * stride + c];
    }
    for (int64_t c = 0; c < cols; ++c) EXPECT_NEAR(sums[c], want[c], 1e-5);
    EXPECT_EQ(sums[cols], count);
  }
}

// The bfloat16 row kernels against double sums of the same bfloat16
// values: 37 columns (two vectors and a tail), a row stride, and padding
// rows skipped.
TEST(CpuKernelsTest, BFloat16RowNormsAndSumsMatchDoubleSums) {
  const int64_t rows = 6, cols = 37, stride = 41;
  const std::vector<float> values = RandomRows(rows, stride, 3.0f, 12);
  std::vector<uint16_t> x(values.size());
  std::vector<double> widened(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &values[i], sizeof(bits));
    x[i] = static_cast<uint16_t>(bits >> 16);  // truncated: any bfloat16
    const uint32_t back = static_cast<uint32_t>(x[i]) << 16;
    float f;
    std::memcpy(&f, &back, sizeof(f));
    widened[i] = f;
  }
  std::vector<float> h(rows);
  RowSquaredNormsBF16(x.data(), rows, cols, stride, 0.25f, h.data());
  for (int64_t i = 0; i < rows; ++i) {
    double want = 0;
    for (int64_t c = 0; c < cols; ++c) {
      want += widened[i * stride + c] * widened[i * stride + c];
    }
    EXPECT_NEAR(h[i], 0.25 * want, 1e-6 * want) << "row " << i;
  }
  const uint8_t keep[rows] = {1, 0, 1, 1, 0, 1};
  for (const uint8_t* mask : {static_cast<const uint8_t*>(keep),
                              static_cast<const uint8_t*>(nullptr)}) {
    std::vector<float> sums(cols + 1, 1.0f);
    AddKeptRowsBF16(x.data(), rows, cols, stride, mask, sums.data());
    double count = 1;
    std::vector<double> want(cols, 1.0);
    for (int64_t i = 0; i < rows; ++i) {
      if (mask != nullptr && !mask[i]) continue;
      ++count;
      for (int64_t c = 0; c < cols; ++c) want[c] += widened[i * stride + c];
    }
    for (int64_t c = 0; c < cols; ++c) {
      EXPECT_NEAR(sums[c], want[c], 1e-5) << "column " << c;
    }
    EXPECT_EQ(sums[cols], count);
  }
}

// FAVOR++'s logit map inside the exp loops: with scale B and a bias per
// column, the key features are exp(B·u + bias − h − shift), the returned
// max and the running shift are those of B·u + bias, and the query features
// are shifted by each row's mapped max. 37 columns exercise the vector
// loop's tail.
TEST(CpuKernelsTest, LogitMapIsAppliedBeforeTheMaxAndTheExp) {
  for (int64_t cols : {256, 37}) {
    const int64_t rows = 5;
    const float scale = 1.7f;
    std::vector<float> bias(cols);
    for (int64_t c = 0; c < cols; ++c) bias[c] = -0.2f * (c % 13);
    const std::vector<float> u0 = RandomRows(rows, cols, 8.0f, 11);
    const auto mapped = [&](int64_t i, int64_t c) {
      return static_cast<double>(u0[i * cols + c]) * scale + bias[c];
    };
    std::vector<float> u = u0, h(rows, 0.25f), sums(cols, 0.0f);
    float shift = -1e30f;
    const float max =
        ExpWithRunningShift(u.data(), h.data(), nullptr, &shift, rows, cols,
                            sums.data(), -1e30f, {scale, bias.data()});
    double want_max = -1e30;
    for (int64_t i = 0; i < rows * cols; ++i) {
      want_max = std::max(want_max, mapped(i / cols, i % cols));
    }
    EXPECT_NEAR(max, want_max, 1e-5 * std::abs(want_max));
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t c = 0; c < cols; ++c) {
        const double arg = mapped(i, c) - 0.25 - shift;
        const double want = std::exp(std::max(arg, -87.0));
        const double bound =
            (kExpRelativeError + 4 * kRounding * (std::abs(arg) + 20)) * want;
        ASSERT_NEAR(u[i * cols + c], want, bound) << i << "," << c;
      }
    }
    std::vector<float> q = u0, z(cols, 1.0f), dot(rows);
    QueryFeaturesWithDot(q.data(), h.data(), rows, cols, 1e-4f, z.data(),
                         dot.data(), {scale, bias.data()});
    for (int64_t i = 0; i < rows; ++i) {
      double row_max = -1e30;
      for (int64_t c = 0; c < cols; ++c) {
        row_max = std::max(row_max, mapped(i, c));
      }
      for (int64_t c = 0; c < cols; ++c) {
        const double arg = mapped(i, c) - row_max - 0.25;
        const double want = std::exp(std::max(arg, -87.0)) + 1e-4;
        const double bound =
            (kExpRelativeError + 4 * kRounding * (std::abs(arg) + 20)) * want;
        ASSERT_NEAR(q[i * cols + c], want, bound) << i << "," << c;
      }
    }
  }
}

TEST(CpuKernelsTest, AddKeptMomentsSumsKeptRowsTheirSquaresAndCountsThem) {
  const int64_t rows = 6, cols = 37, stride = 40;
  const std::vector<float> x = RandomRows(rows, stride, 3.0f, 9);
  const uint8_t keep[rows] = {1, 0, 1, 1, 0, 1};
  for (const uint8_t* mask : {static_cast<const uint8_t*>(keep),
                              static_cast<const uint8_t*>(nullptr)}) {
    std::vector<double> sums(cols, 1.0);
    double squares = 2.0;
    int64_t count = 3;
    AddKeptMoments(x.data(), rows, cols, stride, mask, sums.data(), &squares,
                   &count);
    std::vector<double> want(cols, 1.0);
    double want_squares = 2.0;
    int64_t want_count = 3;
    for (int64_t i = 0; i < rows; ++i) {
      if (mask != nullptr && !mask[i]) continue;
      ++want_count;
      for (int64_t c = 0; c < cols; ++c) {
        const double v = x[i * stride + c];
        want[c] += v;
        want_squares += v * v;
      }
    }
    for (int64_t c = 0; c < cols; ++c) EXPECT_NEAR(sums[c], want[c], 1e-9);
    EXPECT_NEAR(squares, want_squares, 1e-6 * want_squares);
    EXPECT_EQ(count, want_count);
  }
}

}  // namespace
}  // namespace favor::attention::cpu
