// Exact softmax's register-tile CPU path against the softmax written out in
// double (scores, masks, normalisation, the product with the values), on
// both kinds of tiles it runs on (AVX-512 in place, AVX2 packed): padding
// masks shared by a group's heads or one per head, causal order, sliding
// windows, rows a fused product leaves strided, key blocks shorter than a
// tile, query tiles that start mid-sequence, queries that see no key, and
// bfloat16 inputs and output.
#include "server/attention/exact_cpu_path.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "server/attention/cpu_gemm.h"

namespace favor::attention {
namespace {

constexpr int64_t kHeads = 3, kDim = 16, kValueDim = 8, kTokens = 90;

// Restores the widest kernel when a test ends.
class ExactCpuPathTest : public testing::TestWithParam<cpu::GemmKernel> {
 protected:
  void SetUp() override {
    cpu::LimitGemmKernel(GetParam());
    if (cpu::ActiveGemmKernel() != GetParam()) {
      GTEST_SKIP() << "this CPU has no " << cpu::GemmKernelName(GetParam())
                   << " tiles";
    }
  }
  void TearDown() override { cpu::LimitGemmKernel(cpu::GemmKernel::kAvx512); }
};

struct Case {
  std::string name;
  bool causal = false;
  int64_t window_radius = -1;
  int64_t key_tile = 1024;
  // 0: no mask; 1: one (Lk) mask for every head; 2: one per head.
  int keep_dims = 0;
  bool strided = false;
  // Q, K, V and the output in bfloat16 (a bfloat16 model's attention).
  bool bfloat16 = false;
};

// A group of kHeads heads: Q, K and V as views of one fused (heads, L,
// 2d + dv) tensor when `strided`, else each its own.
HeadGroup Group(const Case& c, uint64_t seed) {
  at::manual_seed(seed);
  HeadGroup group;
  if (c.strided) {
    const at::Tensor fused = at::randn({kHeads, kTokens, 2 * kDim + kValueDim});
    group.query = fused.narrow(2, 0, kDim);
    group.key = fused.narrow(2, kDim, kDim);
    group.value = fused.narrow(2, 2 * kDim, kValueDim);
  } else {
    group.query = at::randn({kHeads, kTokens, kDim});
    group.key = at::randn({kHeads, kTokens, kDim});
    group.value = at::randn({kHeads, kTokens, kValueDim});
  }
  // Larger scores than unit inputs give, so that the running maximum moves
  // between key blocks and the corrections matter.
  group.query = group.query * 3.0;
  if (c.keep_dims == 1) group.keep = at::rand({kTokens}) > 0.3;
  if (c.keep_dims == 2) {
    group.keep = at::rand({kHeads, kTokens}) > 0.3;
    group.keep[1].fill_(false);  // head 1 sees no key at all
  }
  group.out = at::full({kHeads, kTokens, kValueDim}, NAN);
  if (c.bfloat16) {
    group.query = group.query.to(at::kBFloat16);
    group.key = group.key.to(at::kBFloat16);
    group.value = group.value.to(at::kBFloat16);
    group.out = group.out.to(at::kBFloat16);
  }
  return group;
}

// softmax(q kᵀ/√d, masked) v in double; a query that sees no key gets 0.
at::Tensor Reference(const HeadGroup& group, const Case& c) {
  const at::Tensor q = group.query.to(at::kDouble);
  const at::Tensor k = group.key.to(at::kDouble);
  at::Tensor scores =
      at::matmul(q, k.transpose(1, 2)) / std::sqrt(double(kDim));
  const at::Tensor i = at::arange(kTokens).view({1, -1, 1});
  const at::Tensor j = at::arange(kTokens).view({1, 1, -1});
  at::Tensor hidden = at::zeros({kHeads, kTokens, kTokens}, at::kBool);
  if (c.causal) hidden.logical_or_(j > i);
  if (c.window_radius >= 0) hidden.logical_or_((i - j).abs() > c.window_radius);
  if (group.keep.defined()) {
    hidden.logical_or_(group.keep.logical_not().view({-1, 1, kTokens}));
  }
  scores.masked_fill_(hidden, -INFINITY);
  at::Tensor p = at::softmax(scores, -1);
  p.masked_fill_(hidden.all(-1, /*keepdim=*/true), 0.0);
  return at::matmul(p, group.value.to(at::kDouble));
}

TEST_P(ExactCpuPathTest, MatchesTheSoftmaxWrittenOut) {
  const Case cases[] = {
      {"plain"},
      {"causal", true},
      {"short key blocks", false, -1, 7},
      {"causal, short key blocks", true, -1, 7},
      {"window", false, 5},
      {"causal window, short key blocks", true, 5, 4},
      {"window past the sequence", false, 200, 16},
      {"one mask for every head", false, -1, 16, 1},
      {"a mask per head, one hiding every key", true, -1, 16, 2},
      {"strided rows", false, 9, 1024, 1, true},
      {"bfloat16", true, -1, 16, 2, false, true},
      {"bfloat16, strided rows", false, 9, 1024, 1, true, true},
  };
  uint64_t seed = 1;
  for (const Case& c : cases) {
    for (int64_t query_tile : {int64_t{128}, int64_t{13}}) {
      SCOPED_TRACE(c.name + ", query tile " + std::to_string(query_tile));
      HeadGroup group = Group(c, seed++);
      ASSERT_TRUE(ExactCpuPathApplies(group));
      AttentionOptions options;
      options.kernel = Kernel::kSoftmaxExact;
      options.causal = c.causal;
      options.window_radius = c.window_radius;
      options.exact_key_tile = c.key_tile;
      for (int64_t begin = 0; begin < kTokens; begin += query_tile) {
        ExactQueryTileCpu(group, options, begin,
                          std::min(kTokens, begin + query_tile));
      }
      const at::Tensor expected = Reference(group, c);
      const double error =
          (group.out.to(at::kDouble) - expected).abs().max().item<double>();
      // float32's sums, or (bfloat16) the output's own rounding, 2^-9 of
      // a value, from a softmax of the bfloat16 inputs.
      const double tolerance = c.bfloat16 ? 1.0 / 256 : 2e-6;
      EXPECT_LT(error, tolerance * (1.0 + expected.abs().max().item<double>()));
      if (c.keep_dims == 2) {
        EXPECT_TRUE(group.out[1].eq(0).all().item<bool>())
            << "a head that sees no key gets zeros";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryTileKernel, ExactCpuPathTest,
                         testing::Values(cpu::GemmKernel::kAvx512,
                                         cpu::GemmKernel::kAvx2),
                         [](const auto& param_info) {
                           return std::string(
                               cpu::GemmKernelName(param_info.param));
                         });

TEST(ExactCpuPathAppliesTest, OnlyToFloat32OrBFloat16OnTiles) {
  Case plain;
  HeadGroup group = Group(plain, 1);
  const bool tiles = cpu::ActiveGemmKernel() != cpu::GemmKernel::kPortable;
  EXPECT_EQ(ExactCpuPathApplies(group), tiles);
  HeadGroup mixed = group;
  mixed.query = group.query.to(at::kBFloat16);
  EXPECT_FALSE(ExactCpuPathApplies(mixed)) << "bfloat16 queries, float32 keys";
  HeadGroup half = group;
  for (at::Tensor* t : {&half.query, &half.key, &half.value, &half.out}) {
    *t = t->to(at::kHalf);
  }
  EXPECT_FALSE(ExactCpuPathApplies(half)) << "float16: the tensor loop";
  HeadGroup columns = group;
  columns.key = group.key.transpose(1, 2).contiguous().transpose(1, 2);
  EXPECT_FALSE(ExactCpuPathApplies(columns)) << "keys with strided columns";
  cpu::LimitGemmKernel(cpu::GemmKernel::kPortable);
  EXPECT_FALSE(ExactCpuPathApplies(group)) << "no tiles: the tensor loop";
  cpu::LimitGemmKernel(cpu::GemmKernel::kAvx512);
}

}  // namespace
}  // namespace favor::attention
