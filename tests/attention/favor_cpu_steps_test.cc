// The fused CPU path's pieces against LibTorch's own products and plain
// sums; the path as a whole is checked in favor_cpu_path_test.cc.
#include "server/attention/favor_cpu_steps.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <vector>

namespace favor::attention::favor_cpu {
namespace {

// c = a · b and then c += a · b, with a read through a transposed view and b
// with a row stride wider than its columns, on every back end this CPU has.
TEST(FavorCpuStepsTest, ProductsEqualLibTorchsOnEveryBackEnd) {
  at::manual_seed(1);
  const int64_t rows = 37, cols = 24, depth = 29;
  const at::Tensor a_t = at::randn({depth, rows});  // a = a_tᵀ
  const at::Tensor b_wide = at::randn({depth, cols + 5});
  const at::Tensor b = b_wide.narrow(1, 0, cols);
  const at::Tensor want =
      at::matmul(a_t.t().to(at::kDouble), b.to(at::kDouble));
  const cpu::MatrixView a{a_t.data_ptr<float>(), 1, rows};
  for (const bool fast : {true, false}) {
    cpu::SetFastGemmEnabled(fast);
    std::vector<float> c(rows * cols, 1e30f);
    MatMul(rows, cols, depth, a, b_wide.data_ptr<float>(), cols + 5, c.data(),
           cols, /*accumulate=*/false);
    MatMul(rows, cols, depth, a, b_wide.data_ptr<float>(), cols + 5, c.data(),
           cols, /*accumulate=*/true);
    const at::Tensor got =
        at::from_blob(c.data(), {rows, cols}).to(at::kDouble);
    EXPECT_LT((got - 2 * want).abs().max().item<double>(), 1e-4) << fast;
    if (fast && ProductsOnPackedAvx2()) {
      std::vector<float> p(rows * cols, 1e30f);
      const float* packed =
          PackedForAvx2(ScratchSlot::kPackedValues, depth, cols,
                        b_wide.data_ptr<float>(), cols + 5);
      PackedProduct(rows, cols, depth, a, packed, p.data(), cols, false);
      PackedProduct(rows, cols, depth, a, packed, p.data(), cols, true);
      const at::Tensor packed_got =
          at::from_blob(p.data(), {rows, cols}).to(at::kDouble);
      EXPECT_LT((packed_got - 2 * want).abs().max().item<double>(), 1e-4);
    }
  }
  cpu::SetFastGemmEnabled(true);
}

TEST(FavorCpuStepsTest, KeptValuesZeroPaddingRowsAndCountTheRest) {
  const int64_t rows = 5, dv = 3, stride = 7;
  std::vector<float> values(rows * stride);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 1.0f + i;
  const uint8_t keep[rows] = {1, 0, 1, 1, 0};
  std::vector<float> scratch(rows * dv, -1.0f), sums(dv + 1, 0.0f);
  const cpu::MatrixView v = KeptValues(values.data(), stride, rows, dv, keep,
                                       scratch.data(), sums.data());
  EXPECT_EQ(v.data, scratch.data());
  EXPECT_EQ(v.row_stride, dv);
  std::vector<float> want_sums(dv + 1, 0.0f);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t c = 0; c < dv; ++c) {
      const float x = keep[i] ? values[i * stride + c] : 0.0f;
      EXPECT_EQ(scratch[i * dv + c], x) << i << " " << c;
      want_sums[c] += x;
    }
    want_sums[dv] += keep[i];
  }
  EXPECT_EQ(sums, want_sums);
  // Without a mask: the rows in place, all counted.
  std::vector<float> all(dv + 1, 0.0f);
  const cpu::MatrixView in_place = KeptValues(
      values.data(), stride, rows, dv, nullptr, scratch.data(), all.data());
  EXPECT_EQ(in_place.data, values.data());
  EXPECT_EQ(in_place.row_stride, stride);
  EXPECT_EQ(all[dv], rows);
}

TEST(FavorCpuStepsTest, KeptValueBitsCopyOnlyUnderAMask) {
  const int64_t rows = 3, dv = 2, stride = 4;
  const std::vector<cpu::BFloat16Bits> values = {1, 2, 9, 9, 3, 4,
                                                 9, 9, 5, 6, 9, 9};
  std::vector<cpu::BFloat16Bits> scratch(rows * dv, 77);
  int64_t kept_stride = 0;
  EXPECT_EQ(KeptValueBits(values.data(), stride, rows, dv, nullptr,
                          scratch.data(), &kept_stride),
            values.data());
  EXPECT_EQ(kept_stride, stride);
  const uint8_t keep[rows] = {1, 0, 1};
  EXPECT_EQ(KeptValueBits(values.data(), stride, rows, dv, keep, scratch.data(),
                          &kept_stride),
            scratch.data());
  EXPECT_EQ(kept_stride, dv);
  EXPECT_EQ(scratch, (std::vector<cpu::BFloat16Bits>{1, 2, 0, 0, 5, 6}));
}

}  // namespace
}  // namespace favor::attention::favor_cpu
