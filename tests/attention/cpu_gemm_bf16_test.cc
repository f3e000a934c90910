#include "server/attention/cpu_gemm_bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "server/attention/cpu_features.h"

namespace favor::attention::cpu {
namespace {

struct Shape {
  int64_t rows, cols, depth;
};

// Random bfloat16 operands: a (rows × depth, leading dimension padded),
// b (depth × cols, float32 already on the bfloat16 grid, so that packing
// loses nothing and the double sums below see the kernel's exact inputs).
struct Operands {
  int64_t lda;
  std::vector<BFloat16Bits> a;
  std::vector<float> b;
  std::vector<BFloat16Bits> packed;
};

Operands MakeOperands(const Shape& s, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  Operands o;
  o.lda = s.depth + 3;
  o.a.resize(s.rows * o.lda + 1);
  for (BFloat16Bits& x : o.a) x = ToBFloat16(normal(rng));
  // An odd depth's missing pair half is never read: poison what follows.
  for (int64_t i = 0; i < s.rows; ++i) {
    o.a[i * o.lda + s.depth] = ToBFloat16(std::nanf(""));
  }
  o.b.resize(s.depth * s.cols);
  for (float& x : o.b) x = FromBFloat16(ToBFloat16(normal(rng)));
  o.packed.assign(PackedBF16Size(s.depth, s.cols) + 1, 0x7FC0);
  PackBF16(s.depth, s.cols, {o.b.data(), s.cols, 1}, o.packed.data());
  return o;
}

// Runs GemmBF16 and checks every element of c against a double-precision
// sum of the same bfloat16 products, that c's padding is untouched and
// that packing wrote no further than PackedBF16Size.
void CheckAgainstDoubleSums(const Shape& s, bool accumulate) {
  std::mt19937 rng(
      static_cast<uint32_t>(s.rows * 1000003 + s.cols * 1009 + s.depth * 7));
  const Operands o = MakeOperands(s, rng);
  ASSERT_EQ(o.packed.back(), 0x7FC0) << "packing overran";
  const int64_t ldc = s.cols + 2;
  std::vector<float> c(s.rows * ldc + 1);
  std::normal_distribution<float> normal;
  for (float& x : c) x = normal(rng);
  const std::vector<float> c_before = c;
  GemmBF16(s.rows, s.cols, s.depth, o.a.data(), o.lda, o.packed.data(),
           c.data(), ldc, accumulate);
  // The product from a packed aᵀ: the same sums in the same order, so the
  // same bits, and the same untouched padding.
  std::vector<BFloat16Bits> a_t(s.depth * s.rows);
  for (int64_t i = 0; i < s.rows; ++i) {
    for (int64_t k = 0; k < s.depth; ++k) {
      a_t[k * s.rows + i] = o.a[i * o.lda + k];
    }
  }
  std::vector<BFloat16Bits> packed_a(PackedBF16Size(s.depth, s.rows) + 1);
  PackBF16(s.depth, s.rows, a_t.data(), s.rows, packed_a.data());
  std::vector<float> c_packed_a = c_before;
  GemmBF16PackedA(s.rows, s.cols, s.depth, packed_a.data(), o.packed.data(),
                  c_packed_a.data(), ldc, accumulate);
  for (size_t e = 0; e < c.size(); ++e) {
    ASSERT_EQ(c_packed_a[e], c[e])
        << "GemmBF16PackedA, element " << e << " of " << s.rows << "x"
        << s.cols << "x" << s.depth;
  }
  for (int64_t i = 0; i < s.rows; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = c[i * ldc + j];
      if (j >= s.cols) {
        ASSERT_EQ(got, c_before[i * ldc + j])
            << "padding written at " << i << "," << j;
        continue;
      }
      double want = accumulate ? c_before[i * ldc + j] : 0.0;
      double magnitude = std::abs(want);
      for (int64_t k = 0; k < s.depth; ++k) {
        const double product =
            double{FromBFloat16(o.a[i * o.lda + k])} * o.b[k * s.cols + j];
        want += product;
        magnitude += std::abs(product);
      }
      // Products of bfloat16 are exact in float32 (8 + 8 significant bits);
      // only the float32 additions round, each by at most 2^-24 of the
      // running sum: below depth · 2^-24 · Σ|terms| in all (loose).
      const double bound = (s.depth + 1) * 6e-8 * magnitude + 1e-30;
      ASSERT_NEAR(got, want, bound)
          << "element " << i << "," << j << " of " << s.rows << "x" << s.cols
          << "x" << s.depth << (accumulate ? " accumulate" : "");
    }
  }
  ASSERT_EQ(c.back(), c_before.back());
}

std::vector<Shape> Shapes() {
  std::vector<Shape> shapes;
  // Every remainder of the six-row tiles, every panel width (one to four
  // vectors, full and masked), odd and even depths from none to FAVOR+'s.
  for (int64_t rows : {1, 2, 3, 4, 5, 6, 7, 11, 12, 13, 64}) {
    for (int64_t cols : {1, 8, 16, 17, 33, 48, 64, 65, 100, 256}) {
      for (int64_t depth : {0, 1, 2, 7, 64}) {
        shapes.push_back({rows, cols, depth});
      }
    }
  }
  return shapes;
}

class GemmBF16Test : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override { SetFastGemmBF16Enabled(GetParam()); }
  void TearDown() override { SetFastGemmBF16Enabled(true); }
};

TEST_P(GemmBF16Test, MatchesDoubleSums) {
  for (const Shape& s : Shapes()) {
    for (bool accumulate : {false, true}) {
      CheckAgainstDoubleSums(s, accumulate);
      if (HasFatalFailure()) return;
    }
  }
}

// FAVOR+'s three products at their real sizes: 64- and 512-token steps,
// d = 64, m = 256.
TEST_P(GemmBF16Test, MatchesDoubleSumsAtFavorShapes) {
  for (int64_t tokens : {64, 512}) {
    CheckAgainstDoubleSums({tokens, 256, 64}, false);  // u = x · Wᵀ
    CheckAgainstDoubleSums({256, 64, tokens}, true);   // S += uᵀ · v
    CheckAgainstDoubleSums({tokens, 64, 256}, false);  // numerators = u · S
  }
}

TEST_P(GemmBF16Test, OverwritesUninitialisedOutput) {
  const int64_t rows = 7, cols = 20, depth = 3;
  std::vector<BFloat16Bits> a(rows * depth, ToBFloat16(1.0f));
  std::vector<BFloat16Bits> b(depth * cols, ToBFloat16(2.0f));
  std::vector<BFloat16Bits> packed(PackedBF16Size(depth, cols));
  PackBF16(depth, cols, b.data(), cols, packed.data());
  std::vector<float> c(rows * cols, std::nanf(""));
  GemmBF16(rows, cols, depth, a.data(), depth, packed.data(), c.data(), cols,
           /*accumulate=*/false);
  for (float x : c) EXPECT_EQ(x, 6.0f);
}

TEST_P(GemmBF16Test, EmptyShapesTouchNothing) {
  std::vector<float> c(4, 5.0f);
  const BFloat16Bits a = ToBFloat16(1.0f), b[2] = {a, 0};
  GemmBF16(0, 4, 1, &a, 1, b, c.data(), 4, false);
  GemmBF16(1, 0, 1, &a, 1, b, c.data(), 4, false);
  for (float x : c) EXPECT_EQ(x, 5.0f);
}

// The vectorised conversions round every value as ToBFloat16 does: ties,
// NaN, infinities, denormals, and the masked tail of a row.
TEST_P(GemmBF16Test, ConversionsRoundAsToBFloat16) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  const int64_t rows = 5, cols = 37, ld = cols + 3;
  std::vector<float> x(rows * ld);
  for (float& v : x) v = normal(rng);
  const float specials[] = {std::nanf(""),
                            -std::nanf(""),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            1e-40f,  // denormal
                            1.0f + 0x1p-8f,
                            1.0f + 3 * 0x1p-8f,
                            std::numeric_limits<float>::max(),
                            -0.0f};
  for (size_t i = 0; i < std::size(specials); ++i) x[i * 7] = specials[i];
  std::vector<BFloat16Bits> out(rows * cols);
  ConvertToBF16(rows, cols, {x.data(), ld, 1}, out.data(), cols);
  std::vector<BFloat16Bits> packed(PackedBF16Size(rows, cols));
  PackBF16(rows, cols, {x.data(), ld, 1}, packed.data());
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      const BFloat16Bits want = ToBFloat16(x[i * ld + j]);
      ASSERT_EQ(out[i * cols + j], want) << i << "," << j;
      ASSERT_EQ(packed[(i / 2) * 2 * cols + 2 * j + i % 2], want)
          << i << "," << j;
    }
  }
  for (int64_t j = 0; j < cols; ++j) {  // the odd depth's zero half
    ASSERT_EQ(packed[(rows / 2) * 2 * cols + 2 * j + 1], 0) << j;
  }
  // Packing bfloat16 bits interleaves them as they are, masked tail and
  // odd depth included.
  std::vector<BFloat16Bits> packed_bits(PackedBF16Size(rows, cols) + 1, 7);
  PackBF16(rows, cols, out.data(), cols, packed_bits.data());
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      ASSERT_EQ(packed_bits[(i / 2) * 2 * cols + 2 * j + i % 2],
                out[i * cols + j])
          << i << "," << j;
    }
  }
  for (int64_t j = 0; j < cols; ++j) {
    ASSERT_EQ(packed_bits[(rows / 2) * 2 * cols + 2 * j + 1], 0) << j;
  }
  ASSERT_EQ(packed_bits.back(), 7) << "packing overran";
}

INSTANTIATE_TEST_SUITE_P(FastAndPortable, GemmBF16Test, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& param_info) {
                           return param_info.param ? "Fast" : "Portable";
                         });

// The two paths add the same products in the same order: on the AMD Zen
// CPU this was written on they agree bit for bit. The bound leaves room for
// a vdpbf16ps that rounds its two additions once rather than twice, and
// for its flushing of denormals.
TEST(GemmBF16PathsTest, FastAndPortableAgree) {
  const Shape s{13, 100, 257};
  std::mt19937 rng(5);
  const Operands o = MakeOperands(s, rng);
  std::vector<float> fast(s.rows * s.cols), portable(s.rows * s.cols);
  GemmBF16(s.rows, s.cols, s.depth, o.a.data(), o.lda, o.packed.data(),
           fast.data(), s.cols, false);
  SetFastGemmBF16Enabled(false);
  GemmBF16(s.rows, s.cols, s.depth, o.a.data(), o.lda, o.packed.data(),
           portable.data(), s.cols, false);
  SetFastGemmBF16Enabled(true);
  for (size_t i = 0; i < fast.size(); ++i) {
    ASSERT_NEAR(fast[i], portable[i], 1e-6 * (1 + std::abs(portable[i])))
        << "element " << i;
  }
}

TEST(BFloat16ConversionTest, RoundsToNearestEven) {
  EXPECT_EQ(ToBFloat16(1.0f), 0x3F80);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even 1.
  EXPECT_EQ(ToBFloat16(1.0f + 0x1p-8f), 0x3F80);
  // 1 + 3 · 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up.
  EXPECT_EQ(ToBFloat16(1.0f + 3 * 0x1p-8f), 0x3F82);
  EXPECT_EQ(ToBFloat16(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);  // above half
  EXPECT_EQ(FromBFloat16(ToBFloat16(-2.5f)), -2.5f);
  EXPECT_EQ(ToBFloat16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_TRUE(std::isnan(FromBFloat16(ToBFloat16(std::nanf("")))));
  // The largest float rounds up to infinity, as IEEE rounding does.
  EXPECT_EQ(ToBFloat16(std::numeric_limits<float>::max()), 0x7F80);
}

TEST(BFloat16ConversionTest, CopiesStridedBFloat16) {
  const BFloat16Bits x[6] = {1, 2, 3, 4, 5, 6};  // 2 × 3, row-major
  BFloat16Bits t[6];
  CopyBF16(3, 2, x, 1, 3, t, 2);  // the transpose, 3 × 2
  const BFloat16Bits want[6] = {1, 4, 2, 5, 3, 6};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t[i], want[i]) << i;
}

TEST(BFloat16ConversionTest, ConvertsStridedViewsAndPacksPairs) {
  const float x[6] = {1, 2, 3, 4, 5, 6};  // 2 × 3, row-major
  BFloat16Bits t[6];
  ConvertToBF16(3, 2, {x, 1, 3}, t, 2);  // the transpose, 3 × 2
  const float want[6] = {1, 4, 2, 5, 3, 6};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(FromBFloat16(t[i]), want[i]) << i;
  // Depth 3 × cols 2: pairs (rows 0, 1) then (row 2, zero).
  BFloat16Bits packed[8];
  PackBF16(3, 2, {x, 2, 1}, packed);
  const float pairs[8] = {1, 3, 2, 4, 5, 0, 6, 0};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(FromBFloat16(packed[i]), pairs[i]);
}

TEST(GemmBF16SelectionTest, IsFastWhereTheCpuHasAvx512Bf16) {
  const CpuFeatures cpu = DetectedCpuFeatures();
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  EXPECT_EQ(GemmBF16IsFast(), cpu.avx512_bf16 && cpu.avx512bw && cpu.avx512vl);
#endif
  SetFastGemmBF16Enabled(false);
  EXPECT_FALSE(GemmBF16IsFast());
  SetFastGemmBF16Enabled(true);
}

}  // namespace
}  // namespace favor::attention::cpu
