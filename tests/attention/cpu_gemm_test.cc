#include "server/attention/cpu_gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "server/attention/cpu_features.h"
#include "server/attention/cpu_gelu.h"

namespace favor::attention::cpu {
namespace {

struct Shape {
  int64_t rows, cols, depth;
};

// Runs Gemm on random operands (a read through `transposed` strides when
// asked, every leading dimension padded; with `with_bias`, a bias vector)
// and checks every element of c against a
// double-precision sum, and that the padding is untouched.
void CheckAgainstDoubleSums(const Shape& s, bool transposed, bool accumulate,
                            bool with_bias = false) {
  std::mt19937 rng(static_cast<uint32_t>(s.rows * 1000003 + s.cols * 1009 +
                                         s.depth * 7 + transposed));
  std::normal_distribution<float> normal;
  const int64_t lda = (transposed ? s.rows : s.depth) + 3;
  const int64_t ldb = s.cols + 5, ldc = s.cols + 2;
  std::vector<float> a((transposed ? s.depth : s.rows) * lda + 1);
  std::vector<float> b(s.depth * ldb + 1), c(s.rows * ldc + 1);
  std::vector<float> bias(s.cols);
  for (float& x : a) x = normal(rng);
  for (float& x : b) x = normal(rng);
  for (float& x : c) x = normal(rng);
  for (float& x : bias) x = normal(rng);
  const float* bias_data = with_bias ? bias.data() : nullptr;
  const std::vector<float> c_before = c;
  const MatrixView view =
      transposed ? MatrixView{a.data(), 1, lda} : MatrixView{a.data(), lda, 1};
  Gemm(s.rows, s.cols, s.depth, view, b.data(), ldb, c.data(), ldc, accumulate,
       bias_data);
  for (int64_t i = 0; i < s.rows; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = c[i * ldc + j];
      if (j >= s.cols) {
        ASSERT_EQ(got, c_before[i * ldc + j])
            << "padding written at " << i << "," << j;
        continue;
      }
      double want = (accumulate ? c_before[i * ldc + j] : 0.0) +
                    (with_bias ? bias[j] : 0.0);
      double magnitude = std::abs(want);
      for (int64_t k = 0; k < s.depth; ++k) {
        const double product =
            static_cast<double>(
                view.data[i * view.row_stride + k * view.column_stride]) *
            b[k * ldb + j];
        want += product;
        magnitude += std::abs(product);
      }
      // fp32 accumulation over depth terms: each rounding is at most 2^-24
      // of the running sum, so the error is below depth · 2^-24 · Σ|terms|
      // (a loose bound; FMA only rounds less).
      const double bound = (s.depth + 1) * 6e-8 * magnitude + 1e-30;
      ASSERT_NEAR(got, want, bound)
          << "element " << i << "," << j << " of " << s.rows << "x" << s.cols
          << "x" << s.depth << (transposed ? " transposed" : "")
          << (accumulate ? " accumulate" : "") << (with_bias ? " bias" : "");
    }
  }
  ASSERT_EQ(c.back(), c_before.back());
}

std::vector<Shape> Shapes() {
  std::vector<Shape> shapes;
  // Every remainder of the six-row tiles, every panel width (one to four
  // vectors, full and masked), and depths from none to past one depth
  // block (128), in two blocks and a part.
  for (int64_t rows : {1, 2, 3, 4, 5, 6, 7, 11, 12, 13, 64}) {
    for (int64_t cols : {1, 8, 16, 17, 33, 48, 64, 65, 100, 256}) {
      for (int64_t depth : {0, 1, 7, 64, 300}) {
        shapes.push_back({rows, cols, depth});
      }
    }
  }
  return shapes;
}

// Every kernel this CPU runs; the others skip, saying so.
class GemmTest : public testing::TestWithParam<GemmKernel> {
 protected:
  void SetUp() override {
    LimitGemmKernel(GetParam());
    if (ActiveGemmKernel() != GetParam()) {
      GTEST_SKIP() << "this CPU has no " << GemmKernelName(GetParam())
                   << " kernel (FAVOR_CPU_ISA may cap it)";
    }
  }
  void TearDown() override { LimitGemmKernel(GemmKernel::kAvx512); }
};

TEST_P(GemmTest, MatchesDoubleSums) {
  for (const Shape& s : Shapes()) {
    for (bool transposed : {false, true}) {
      for (bool accumulate : {false, true}) {
        for (bool with_bias : {false, true}) {
          CheckAgainstDoubleSums(s, transposed, accumulate, with_bias);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// FAVOR+'s three products at their real sizes: 64 tokens, d = 64, m = 256;
// and a linear layer's: 256 rows of 256 features to 768, with its bias.
TEST_P(GemmTest, MatchesDoubleSumsAtFavorAndLinearShapes) {
  CheckAgainstDoubleSums({64, 256, 64}, false, false);  // u = x · Wᵀ
  CheckAgainstDoubleSums({256, 64, 64}, true, true);    // S += uᵀ · v
  CheckAgainstDoubleSums({64, 64, 256}, false, false);  // numerators = u · S
  CheckAgainstDoubleSums({256, 768, 256}, false, false, /*with_bias=*/true);
}

TEST_P(GemmTest, OverwritesUninitialisedOutput) {
  const int64_t rows = 7, cols = 20, depth = 3;
  std::vector<float> a(rows * depth, 1.0f), b(depth * cols, 2.0f);
  std::vector<float> c(rows * cols, std::nanf(""));
  Gemm(rows, cols, depth, {a.data(), depth, 1}, b.data(), cols, c.data(), cols,
       /*accumulate=*/false);
  for (float x : c) EXPECT_EQ(x, 6.0f);
  const std::vector<float> bias(cols, 0.5f);
  std::fill(c.begin(), c.end(), std::nanf(""));
  Gemm(rows, cols, depth, {a.data(), depth, 1}, b.data(), cols, c.data(), cols,
       /*accumulate=*/false, bias.data());
  for (float x : c) EXPECT_EQ(x, 6.5f);
}

TEST_P(GemmTest, EmptyShapesTouchNothing) {
  std::vector<float> c(4, 5.0f);
  const float a = 1.0f, b = 1.0f;
  Gemm(0, 4, 1, {&a, 1, 1}, &b, 4, c.data(), 4, false);
  Gemm(1, 0, 1, {&a, 1, 1}, &b, 4, c.data(), 4, false);
  for (float x : c) EXPECT_EQ(x, 5.0f);
}

// A row's sums do not depend on the rows computed with it: the same bits
// alone, in any tile position and in any number of rows.
TEST_P(GemmTest, ARowIsTheSameBitsInAnyNumberOfRows) {
  const int64_t depth = 256, cols = 100;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> a(13 * depth), b(depth * cols), bias(cols);
  for (float& x : a) x = normal(rng);
  for (float& x : b) x = normal(rng);
  for (float& x : bias) x = normal(rng);
  std::vector<float> all(13 * cols), one(cols);
  Gemm(13, cols, depth, {a.data(), depth, 1}, b.data(), cols, all.data(), cols,
       false, bias.data());
  for (int64_t i = 0; i < 13; ++i) {
    Gemm(1, cols, depth, {a.data() + i * depth, depth, 1}, b.data(), cols,
         one.data(), cols, false, bias.data());
    for (int64_t j = 0; j < cols; ++j) {
      ASSERT_EQ(one[j], all[i * cols + j]) << "row " << i << ", column " << j;
    }
  }
}

// b packed once (a layer's weight) gives the same bits as b read in place,
// for every shape, start and column slice that begins a panel.
TEST_P(GemmTest, PackedBIsTheSameBitsAsUnpacked) {
  const GemmKernel kernel = GetParam();
  const int64_t panel = PanelColumns(kernel);
  if (kernel == GemmKernel::kPortable) {
    EXPECT_EQ(panel, 0);
    EXPECT_EQ(PackedBSize(64, 64, kernel), 0);
    return;
  }
  ASSERT_GT(panel, 0);
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  for (const Shape& s : Shapes()) {
    const int64_t ldb = s.cols + 3;
    std::vector<float> a(s.rows * s.depth + 1), b(s.depth * ldb + 1);
    std::vector<float> bias(s.cols), start(s.rows * s.cols);
    for (float& x : a) x = normal(rng);
    for (float& x : b) x = normal(rng);
    for (float& x : bias) x = normal(rng);
    for (float& x : start) x = normal(rng);
    const int64_t size = PackedBSize(s.depth, s.cols, kernel);
    ASSERT_EQ(size, (s.cols + panel - 1) / panel * panel * s.depth);
    std::vector<float> packed(size + 1, std::nanf(""));
    PackB(s.depth, s.cols, b.data(), ldb, kernel, packed.data());
    ASSERT_TRUE(std::isnan(packed.back())) << "PackB wrote past its size";
    // Columns [begin, cols): the whole of b, and a slice from the second
    // panel where there is one.
    for (int64_t begin : {int64_t{0}, panel}) {
      if (begin >= s.cols) continue;
      const int64_t cols = s.cols - begin;
      for (bool accumulate : {false, true}) {
        for (bool with_bias : {false, true}) {
          std::vector<float> want = start, got = start;
          const float* bias_data = with_bias ? bias.data() + begin : nullptr;
          Gemm(s.rows, cols, s.depth, {a.data(), s.depth, 1}, b.data() + begin,
               ldb, want.data(), s.cols, accumulate, bias_data);
          GemmPackedB(s.rows, cols, s.depth, {a.data(), s.depth, 1},
                      packed.data() + begin * s.depth, kernel, got.data(),
                      s.cols, accumulate, bias_data);
          for (size_t e = 0; e < want.size(); ++e) {
            ASSERT_EQ(std::memcmp(&got[e], &want[e], sizeof(float)), 0)
                << "element " << e << " of " << s.rows << "x" << cols << "x"
                << s.depth << " from column " << begin
                << (accumulate ? " accumulate" : "")
                << (with_bias ? " bias" : "");
          }
        }
      }
    }
  }
}

// Epilogue::kGelu: the sums' GELU (GeluScalar, which cpu_gelu_test checks
// against erf in double), the same bits from the AVX-512 tiles' registers
// as from the other kernels' pass, packed or not, over every tile tail.
TEST_P(GemmTest, GeluEpilogueIsGeluOfTheSums) {
  const GemmKernel kernel = GetParam();
  EXPECT_EQ(GemmFusesGelu(), kernel == GemmKernel::kAvx512);
  const int64_t panel = PanelColumns(kernel);
  std::mt19937 rng(13);
  std::normal_distribution<float> normal;
  for (const Shape& s : Shapes()) {
    std::vector<float> a(s.rows * s.depth + 1), b(s.depth * s.cols + 1);
    std::vector<float> bias(s.cols), start(s.rows * s.cols);
    for (float& x : a) x = normal(rng);
    for (float& x : b) x = normal(rng);
    for (float& x : bias) x = normal(rng);
    for (float& x : start) x = normal(rng);
    std::vector<float> packed(std::max<int64_t>(
        1, PackedBSize(s.depth, s.cols, kernel)));
    if (panel > 0) PackB(s.depth, s.cols, b.data(), s.cols, kernel, packed.data());
    for (bool accumulate : {false, true}) {
      std::vector<float> sums = start;
      Gemm(s.rows, s.cols, s.depth, {a.data(), s.depth, 1}, b.data(), s.cols,
           sums.data(), s.cols, accumulate, bias.data());
      std::vector<float> got = start;
      Gemm(s.rows, s.cols, s.depth, {a.data(), s.depth, 1}, b.data(), s.cols,
           got.data(), s.cols, accumulate, bias.data(), Epilogue::kGelu);
      std::vector<float> got_packed = start;
      if (panel > 0) {
        GemmPackedB(s.rows, s.cols, s.depth, {a.data(), s.depth, 1},
                    packed.data(), kernel, got_packed.data(), s.cols,
                    accumulate, bias.data(), Epilogue::kGelu);
      }
      for (size_t e = 0; e < sums.size(); ++e) {
        const float want = GeluScalar(sums[e]);
        ASSERT_EQ(std::memcmp(&got[e], &want, sizeof(float)), 0)
            << "element " << e << " of " << s.rows << "x" << s.cols << "x"
            << s.depth << (accumulate ? " accumulate" : "") << ": " << got[e]
            << " against " << want;
        if (panel > 0) {
          ASSERT_EQ(std::memcmp(&got_packed[e], &want, sizeof(float)), 0)
              << "packed, element " << e << " of " << s.rows << "x" << s.cols
              << "x" << s.depth;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryKernel, GemmTest,
    testing::Values(GemmKernel::kPortable, GemmKernel::kAvx2,
                    GemmKernel::kAvx512),
    [](const testing::TestParamInfo<GemmKernel>& param_info) {
      return std::string(GemmKernelName(param_info.param));
    });

TEST(GemmSelectionTest, RunsTheWidestKernelTheCpuHas) {
  const CpuFeatures cpu = DetectedCpuFeatures();
  const GemmKernel widest = cpu.avx512f           ? GemmKernel::kAvx512
                            : cpu.avx2 && cpu.fma ? GemmKernel::kAvx2
                                                  : GemmKernel::kPortable;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  EXPECT_EQ(ActiveGemmKernel(), widest);
#endif
  LimitGemmKernel(GemmKernel::kAvx2);
  EXPECT_EQ(ActiveGemmKernel(), std::min(widest, GemmKernel::kAvx2));
  SetFastGemmEnabled(false);
  EXPECT_FALSE(GemmIsFast());
  SetFastGemmEnabled(true);
  EXPECT_EQ(ActiveGemmKernel(), widest);
}

}  // namespace
}  // namespace favor::attention::cpu
