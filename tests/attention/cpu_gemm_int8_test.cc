#include "server/attention/cpu_gemm_int8.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "server/attention/cpu_features.h"
#include "server/attention/cpu_gemm.h"

namespace favor::attention::cpu {
namespace {

struct Shape {
  int64_t rows, cols, depth;
};

// Random operands, their quantised forms and GemmInt8's output.
struct Operands {
  Shape s;
  int64_t lda, ldb, ldc, q_stride;
  std::vector<float> a, b, c, bias;
  std::vector<int8_t> packed;
  std::vector<float> w_scales, x_scales;
  std::vector<int32_t> column_sums, zero_points;
  std::vector<uint8_t> q;

  explicit Operands(const Shape& shape, uint32_t seed = 0) : s(shape) {
    std::mt19937 rng(static_cast<uint32_t>(s.rows * 1000003 + s.cols * 1009 +
                                           s.depth * 7) +
                     seed);
    std::normal_distribution<float> normal;
    lda = s.depth + 3;
    ldb = s.cols + 5;
    ldc = s.cols + 2;
    q_stride = Int8PaddedDepth(s.depth) + 4;
    a.resize(s.rows * lda);
    b.resize(s.depth * ldb);
    c.resize(s.rows * ldc);
    bias.resize(s.cols);
    for (float& x : a) x = normal(rng);
    for (float& x : b) x = 0.1f * normal(rng);
    for (float& x : c) x = normal(rng);
    for (float& x : bias) x = normal(rng);
    packed.resize(Int8PackedWeightBytes(s.depth, s.cols));
    w_scales.resize(s.cols);
    column_sums.resize(s.cols);
    QuantizeWeightInt8(s.depth, s.cols, b.data(), ldb, packed.data(),
                       w_scales.data(), column_sums.data());
    q.assign(s.rows * q_stride, 0xAB);
    x_scales.resize(s.rows);
    zero_points.resize(s.rows);
    QuantizeRowsInt8(s.rows, s.depth, a.data(), lda, q.data(), q_stride,
                     x_scales.data(), zero_points.data());
  }

  Int8Rows rows() const {
    return {q.data(), q_stride, x_scales.data(), zero_points.data()};
  }
  Int8Weight weight() const {
    return {packed.data(), w_scales.data(), column_sums.data()};
  }
  std::vector<float> Run(Int8Kernel kernel, bool accumulate, bool with_bias,
                         int64_t first_row = 0, int64_t rows = -1) const {
    if (rows < 0) rows = s.rows;
    std::vector<float> out = c;
    const Int8Rows x{q.data() + first_row * q_stride, q_stride,
                     x_scales.data() + first_row,
                     zero_points.data() + first_row};
    GemmInt8With(kernel, rows, s.cols, s.depth, x, weight(),
                 out.data() + first_row * ldc, ldc, accumulate,
                 with_bias ? bias.data() : nullptr);
    return out;
  }
};

bool HasAvx2() { return DetectedCpuFeatures().avx2; }

// The tile kernels this CPU runs (HasInt8Kernel), each compared with the
// plain loops; a CPU with none has nothing to compare.
std::vector<Int8Kernel> TileKernels() {
  std::vector<Int8Kernel> kernels;
  for (const Int8Kernel kernel : {Int8Kernel::kAvx2, Int8Kernel::kAvx512Vnni}) {
    if (HasInt8Kernel(kernel)) kernels.push_back(kernel);
  }
  return kernels;
}

std::vector<Int8Kernel> AllKernels() {
  std::vector<Int8Kernel> kernels = TileKernels();
  kernels.insert(kernels.begin(), Int8Kernel::kPortable);
  return kernels;
}

// The documented quantisation, computed here from the formulas of
// cpu_gemm_int8.h, not from the code under test.
TEST(GemmInt8Test, QuantisationFollowsTheDocumentedFormulas) {
  const Operands o({7, 29, 37});
  for (int64_t j = 0; j < o.s.cols; ++j) {
    float largest = 0;
    for (int64_t k = 0; k < o.s.depth; ++k) {
      largest = std::max(largest, std::fabs(o.b[k * o.ldb + j]));
    }
    EXPECT_FLOAT_EQ(o.w_scales[j], largest / 127) << j;
    int32_t sum = 0;
    for (int64_t k = 0; k < o.s.depth; ++k) {
      const float want = std::nearbyint(o.b[k * o.ldb + j] / o.w_scales[j]);
      // Element (k, j) of the packed layout.
      const int64_t groups = Int8PaddedDepth(o.s.depth) / 4;
      const int8_t got =
          o.packed[j / 8 * groups * 32 + k / 4 * 32 + j % 8 * 4 + k % 4];
      EXPECT_EQ(got, static_cast<int8_t>(want)) << k << "," << j;
      sum += got;
    }
    EXPECT_EQ(o.column_sums[j], sum) << j;
  }
  for (int64_t i = 0; i < o.s.rows; ++i) {
    const float* x = o.a.data() + i * o.lda;
    const float lo = std::min(0.0f, *std::min_element(x, x + o.s.depth));
    const float hi = std::max(0.0f, *std::max_element(x, x + o.s.depth));
    EXPECT_FLOAT_EQ(o.x_scales[i], (hi - lo) / 127) << i;
    EXPECT_EQ(o.zero_points[i],
              static_cast<int32_t>(std::nearbyint(-lo * (127 / (hi - lo)))));
    for (int64_t k = 0; k < o.s.depth; ++k) {
      const float dequantised =
          o.x_scales[i] * (o.q[i * o.q_stride + k] - o.zero_points[i]);
      EXPECT_LE(o.q[i * o.q_stride + k], 127);
      EXPECT_NEAR(dequantised, x[k], 0.5001f * o.x_scales[i]) << i << "," << k;
    }
    for (int64_t k = o.s.depth; k < Int8PaddedDepth(o.s.depth); ++k) {
      EXPECT_EQ(o.q[i * o.q_stride + k], 0) << "padding " << i << "," << k;
    }
    EXPECT_EQ(o.q[i * o.q_stride + o.q_stride - 1], 0xAB)
        << "past the padded depth";
  }
}

// Each output against the formula in exact integer arithmetic (int64) on
// the quantised values, dequantised in double: the kernels may differ from
// it only by float32's rounding of the epilogue.
void CheckAgainstIntegerSums(Int8Kernel kernel, const Shape& s,
                             bool accumulate, bool with_bias) {
  const Operands o(s);
  const std::vector<float> got = o.Run(kernel, accumulate, with_bias);
  const int64_t groups = Int8PaddedDepth(s.depth) / 4;
  for (int64_t i = 0; i < s.rows; ++i) {
    for (int64_t j = 0; j < o.ldc; ++j) {
      const float value = got[i * o.ldc + j];
      if (j >= s.cols) {
        ASSERT_EQ(value, o.c[i * o.ldc + j]) << "padding at " << i << "," << j;
        continue;
      }
      int64_t sum = 0, column_sum = 0;
      for (int64_t k = 0; k < s.depth; ++k) {
        const int64_t w =
            o.packed[j / 8 * groups * 32 + k / 4 * 32 + j % 8 * 4 + k % 4];
        sum += int64_t{o.q[i * o.q_stride + k]} * w;
        column_sum += w;
      }
      const double product = double{o.x_scales[i]} * o.w_scales[j] *
                             static_cast<double>(sum - o.zero_points[i] *
                                                           column_sum);
      const double want = product + (with_bias ? o.bias[j] : 0.0) +
                          (accumulate ? o.c[i * o.ldc + j] : 0.0);
      // Each float32 rounding of the epilogue (scales' product, the
      // product, + bias, + c) is relative to what it rounds.
      const double magnitude = std::abs(product) +
                               (with_bias ? std::abs(o.bias[j]) : 0.0) +
                               (accumulate ? std::abs(o.c[i * o.ldc + j]) : 0.0);
      ASSERT_NEAR(value, want, 3e-7 * magnitude + 1e-30)
          << Int8KernelName(kernel) << " rows " << s.rows
          << " cols " << s.cols << " depth " << s.depth << " at " << i << ","
          << j;
    }
  }
}

const Shape kShapes[] = {
    {1, 1, 1},   {1, 24, 4},    {4, 24, 8},    {5, 25, 5},   {3, 7, 3},
    {9, 50, 13}, {4, 48, 64},   {17, 71, 130}, {8, 768, 96}, {6, 100, 768},
    {7, 64, 16}, {13, 120, 36}, {23, 200, 20}};

TEST(GemmInt8Test, PortableKernelMatchesExactIntegerSums) {
  for (const Shape& s : kShapes) {
    for (bool accumulate : {false, true}) {
      for (bool with_bias : {false, true}) {
        CheckAgainstIntegerSums(Int8Kernel::kPortable, s, accumulate,
                                with_bias);
      }
    }
  }
}

// The AVX2 tiles (vpmaddubsw) and the AVX512-VNNI tiles (vpdpbusd) against
// the plain loops: the same bits, on the shapes above (tiles of every row
// count, last vectors of every width, panels past the last).
void ExpectSameBitsAsPortable(Int8Kernel kernel) {
  for (const Shape& s : kShapes) {
    const Operands o(s);
    for (bool accumulate : {false, true}) {
      for (bool with_bias : {false, true}) {
        const std::vector<float> portable =
            o.Run(Int8Kernel::kPortable, accumulate, with_bias);
        const std::vector<float> tiles = o.Run(kernel, accumulate, with_bias);
        ASSERT_EQ(0, std::memcmp(portable.data(), tiles.data(),
                                 portable.size() * sizeof(float)))
            << Int8KernelName(kernel) << " rows " << s.rows << " cols "
            << s.cols << " depth " << s.depth << " accumulate " << accumulate
            << " bias " << with_bias;
      }
    }
  }
}

TEST(GemmInt8Test, Avx2KernelIsTheSameBitsAsPortable) {
  if (!HasInt8Kernel(Int8Kernel::kAvx2)) {
    GTEST_SKIP() << "this CPU has no AVX2: nothing to compare";
  }
  ExpectSameBitsAsPortable(Int8Kernel::kAvx2);
}

TEST(GemmInt8Test, Avx512VnniKernelIsTheSameBitsAsPortable) {
  if (!HasInt8Kernel(Int8Kernel::kAvx512Vnni)) {
    GTEST_SKIP() << "this CPU has no AVX512-VNNI: nothing to compare";
  }
  ExpectSameBitsAsPortable(Int8Kernel::kAvx512Vnni);
}

// Columns [8p, 8p + count) of a quantised weight, read from panel p on (as
// Linear::Columns slices the fused query|key|value layer): the same values
// as those columns of the whole product, though a tile's last vector reads
// the panel after the slice (the next columns' weights, not the padding).
TEST(GemmInt8Test, AColumnSliceIsThoseColumnsOfTheWhole) {
  const Operands o({13, 136, 72});
  const int64_t groups = Int8PaddedDepth(o.s.depth) / 4;
  for (const Int8Kernel kernel : AllKernels()) {
    const std::vector<float> whole = o.Run(kernel, true, true);
    for (const auto& [panel, count] : {std::pair<int64_t, int64_t>{1, 8},
                                       {1, 24},
                                       {2, 72},
                                       {3, 40},
                                       {5, 96}}) {
      const int64_t begin = panel * 8;
      std::vector<float> out = o.c;
      const Int8Weight slice{o.packed.data() + panel * groups * 32,
                             o.w_scales.data() + begin,
                             o.column_sums.data() + begin};
      GemmInt8With(kernel, o.s.rows, count, o.s.depth, o.rows(), slice,
                   out.data() + begin, o.ldc, true, o.bias.data() + begin);
      for (int64_t i = 0; i < o.s.rows; ++i) {
        for (int64_t j = 0; j < o.ldc; ++j) {
          const bool inside = j >= begin && j < begin + count;
          ASSERT_EQ(out[i * o.ldc + j],
                    inside ? whole[i * o.ldc + j] : o.c[i * o.ldc + j])
              << Int8KernelName(kernel) << " slice " << begin << "+" << count
              << " at " << i << "," << j;
        }
      }
    }
  }
}

// The AVX2 rows quantiser (used whenever the kernel is AVX2) and the
// AVX-512 one (with the AVX512-VNNI kernel) against the portable one: the
// same bytes, scales and zero points, for rows of every tail length.
void ExpectSameQuantisationAsPortable(GemmKernel limit) {
  for (const Shape& s : kShapes) {
    LimitGemmKernel(GemmKernel::kPortable);
    const Operands portable(s);
    LimitGemmKernel(limit);
    const Operands tiles(s);
    LimitGemmKernel(GemmKernel::kAvx512);
    EXPECT_EQ(portable.q, tiles.q) << s.depth;
    EXPECT_EQ(portable.x_scales, tiles.x_scales) << s.depth;
    EXPECT_EQ(portable.zero_points, tiles.zero_points) << s.depth;
  }
}

TEST(GemmInt8Test, Avx2QuantisationIsTheSameAsPortable) {
  if (!HasAvx2()) GTEST_SKIP() << "this CPU has no AVX2: nothing to compare";
  ExpectSameQuantisationAsPortable(GemmKernel::kAvx2);
}

TEST(GemmInt8Test, Avx512QuantisationIsTheSameAsPortable) {
  if (!HasInt8Kernel(Int8Kernel::kAvx512Vnni)) {
    GTEST_SKIP() << "this CPU has no AVX512-VNNI: nothing to compare";
  }
  ExpectSameQuantisationAsPortable(GemmKernel::kAvx512);
}

// Every pair of products at its extreme (activations 127, weights ±127):
// vpmaddubsw's int16 sums must not saturate, or the tiles would differ
// from the exact sums.
TEST(GemmInt8Test, ExtremeValuesDoNotSaturate) {
  for (const int sign : {1, -1}) {
    Shape s{4, 24, 64};
    Operands o(s);
    // Rows of equal positive values quantise to 127 (zero point 0);
    // weights of one magnitude per column to ±127.
    for (float& x : o.a) x = 3.0f;
    for (float& w : o.b) w = sign * 0.5f;
    QuantizeWeightInt8(s.depth, s.cols, o.b.data(), o.ldb, o.packed.data(),
                       o.w_scales.data(), o.column_sums.data());
    QuantizeRowsInt8(s.rows, s.depth, o.a.data(), o.lda, o.q.data(),
                     o.q_stride, o.x_scales.data(), o.zero_points.data());
    ASSERT_EQ(o.q[0], 127);
    ASSERT_EQ(o.zero_points[0], 0);
    for (const Int8Kernel kernel : AllKernels()) {
      const std::vector<float> got = o.Run(kernel, false, false);
      for (int64_t j = 0; j < s.cols; ++j) {
        // 64 · 3 · 0.5, which int8 represents exactly here.
        EXPECT_NEAR(got[j], sign * 96.0f, 1e-4f) << Int8KernelName(kernel);
      }
    }
  }
}

// A row's result does not depend on the rows computed with it (tiles of 6
// to 1 rows).
TEST(GemmInt8Test, RowsAreIndependentOfTheirTile) {
  const Operands o({11, 53, 77});
  for (const Int8Kernel kernel : AllKernels()) {
    const std::vector<float> all = o.Run(kernel, true, true);
    for (int64_t i = 0; i < o.s.rows; ++i) {
      const std::vector<float> one = o.Run(kernel, true, true, i, 1);
      ASSERT_EQ(0, std::memcmp(all.data() + i * o.ldc, one.data() + i * o.ldc,
                               o.s.cols * sizeof(float)))
          << Int8KernelName(kernel) << " row " << i;
    }
  }
}

// The point of it all: close to the float32 product. Relative to the
// outputs' RMS, 8-bit weights and 7-bit activations leave about 1%.
TEST(GemmInt8Test, CloseToTheFloatProduct) {
  const Shape s{16, 96, 768};
  const Operands o(s);
  const std::vector<float> got = o.Run(ActiveInt8Kernel(), false, false);
  double error = 0, energy = 0;
  for (int64_t i = 0; i < s.rows; ++i) {
    for (int64_t j = 0; j < s.cols; ++j) {
      double want = 0;
      for (int64_t k = 0; k < s.depth; ++k) {
        want += double{o.a[i * o.lda + k]} * o.b[k * o.ldb + j];
      }
      error += (got[i * o.ldc + j] - want) * (got[i * o.ldc + j] - want);
      energy += want * want;
    }
  }
  EXPECT_LT(std::sqrt(error / energy), 0.02);
}

TEST(GemmInt8Test, ActiveKernelFollowsTheGemmLimit) {
  LimitGemmKernel(GemmKernel::kPortable);
  EXPECT_EQ(ActiveInt8Kernel(), Int8Kernel::kPortable);
  LimitGemmKernel(GemmKernel::kAvx2);
  EXPECT_EQ(ActiveInt8Kernel(),
            HasAvx2() ? Int8Kernel::kAvx2 : Int8Kernel::kPortable);
  LimitGemmKernel(GemmKernel::kAvx512);
  EXPECT_EQ(ActiveInt8Kernel(), HasInt8Kernel(Int8Kernel::kAvx512Vnni)
                                    ? Int8Kernel::kAvx512Vnni
                                : HasAvx2() ? Int8Kernel::kAvx2
                                            : Int8Kernel::kPortable);
}

TEST(GemmInt8Test, KernelsFollowTheCpu) {
  const CpuFeatures cpu = DetectedCpuFeatures();
  EXPECT_TRUE(HasInt8Kernel(Int8Kernel::kPortable));
  EXPECT_EQ(HasInt8Kernel(Int8Kernel::kAvx2), cpu.avx2);
  EXPECT_EQ(HasInt8Kernel(Int8Kernel::kAvx512Vnni),
            cpu.avx512f && cpu.avx512bw && cpu.avx512_vnni);
}

}  // namespace
}  // namespace favor::attention::cpu
