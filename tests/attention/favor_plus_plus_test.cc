// FAVOR++'s choice of A: the closed form against the objective it
// minimises, the statistic against its definition over all (query, key)
// pairs, and the statistics pass over head groups (masks, both paths).
#include "server/attention/favor_plus_plus.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "server/attention/feature_map.h"
#include "server/attention/projection.h"

namespace favor::attention {
namespace {

constexpr int64_t kDim = 16;

// ρ = mean over all (q, k) pairs of ‖q' + k'‖² / d, pair by pair in double.
double RhoOverAllPairs(const at::Tensor& q, const at::Tensor& k) {
  const at::Tensor qd = q.to(at::kDouble) / std::pow(double(kDim), 0.25);
  const at::Tensor kd = k.to(at::kDouble) / std::pow(double(kDim), 0.25);
  const at::Tensor sums = qd.unsqueeze(1) + kd.unsqueeze(0);  // (Lq, Lk, d)
  return (sums.square().sum(-1).mean() / kDim).item<double>();
}

// The averaged log second moment per dimension (favor_plus_plus.h), up to
// terms free of A.
double Objective(double a, double rho) {
  return std::log(1 - 4 * a) - 0.5 * std::log(1 - 8 * a) +
         2 * rho * (1 - 4 * a) / (1 - 8 * a);
}

// Inputs with non-zero means, so that the cross term 2 q̄'ᵀk̄' matters.
struct QueriesAndKeys {
  at::Tensor q, k;
};
QueriesAndKeys Inputs(int64_t lq, int64_t lk, uint64_t seed) {
  at::manual_seed(seed);
  const at::Tensor offset = at::randn({kDim}) * 0.5;
  return {at::randn({lq, kDim}) * 0.8 + offset,
          at::randn({lk, kDim}) * 0.6 + offset};
}

TEST(FavorPlusPlusTest, CoefficientMinimisesTheAveragedLogSecondMoment) {
  const QueriesAndKeys in = Inputs(40, 30, 1);
  const double a = FavorPlusPlusCoefficient(in.q, in.k)->item<double>();
  const double rho = RhoOverAllPairs(in.q, in.k);
  ASSERT_GT(rho, 0.1);
  // The closed form from ρ taken pair by pair, not from the moments.
  const double closed_form =
      (1 - 2 * rho - std::sqrt((2 * rho + 1) * (2 * rho + 1) + 8 * rho)) / 16;
  EXPECT_NEAR(a, closed_form, 1e-6);
  // And it is the minimum: the objective rises on both sides.
  for (double step : {1e-3, 1e-2}) {
    EXPECT_GT(Objective(a - step, rho), Objective(a, rho));
    EXPECT_GT(Objective(a + step, rho), Objective(a, rho));
  }
  EXPECT_LT(a, 0.0);
}

TEST(FavorPlusPlusTest, CoefficientIsZeroForZeroInputsAndPerMatrix) {
  EXPECT_EQ(FavorPlusPlusCoefficient(at::zeros({5, kDim}), at::zeros({7, kDim}))
                ->item<double>(),
            0.0);
  // One A per leading index, each from its own matrices only.
  const QueriesAndKeys a = Inputs(10, 12, 2), b = Inputs(10, 12, 3);
  const at::Tensor both = *FavorPlusPlusCoefficient(at::stack({a.q, b.q * 3}),
                                                    at::stack({a.k, b.k * 3}));
  ASSERT_EQ(both.sizes(), (at::IntArrayRef{2}));
  EXPECT_DOUBLE_EQ(both[0].item<double>(),
                   FavorPlusPlusCoefficient(a.q, a.k)->item<double>());
  EXPECT_NEAR(both[1].item<double>(),
              FavorPlusPlusCoefficient(b.q * 3, b.k * 3)->item<double>(),
              1e-12);
  EXPECT_LT(both[1].item<double>(), both[0].item<double>());
}

TEST(FavorPlusPlusTest, MomentsSkipMaskedRowsWhateverTheChunk) {
  const at::Tensor x = at::randn({2, 50, kDim});
  const at::Tensor keep = at::rand({50}) > 0.4;
  const at::Tensor kept = x.index_select(1, keep.nonzero().view(-1));
  for (int64_t chunk : {7, 50, 1000}) {
    const RowMoments moments = MomentsOf(x, keep, chunk);
    EXPECT_EQ(moments.count.item<double>(), kept.size(1));
    EXPECT_TRUE(
        at::allclose(moments.sums, kept.sum(1).to(at::kDouble), 1e-5, 1e-5));
    EXPECT_TRUE(at::allclose(moments.sum_squared_norms,
                             kept.square().sum({1, 2}).to(at::kDouble), 1e-5));
  }
}

FeatureContext Context() {
  ProjectionOptions options;
  options.num_features = 32;
  options.head_dim = kDim;
  return *FeatureContext::Create(
      Kernel::kFavorPlusPlus, *DrawProjection(options), kDim, at::kCPU, 1e-4f);
}

// The group's A, read back from its logit map (B = √(1 − 4A)).
double GroupA(const HeadGroup& group) {
  const double b = group.logits.scale.view(-1)[0].item<double>();
  return (1 - b * b) / 4;
}

HeadGroup Group(const at::Tensor& q, const at::Tensor& k,
                const at::Tensor& keep) {
  const at::Tensor v = at::randn({q.size(0), k.size(1), 4});
  return {q, k, v, keep, at::empty({q.size(0), q.size(1), 4}), {}};
}

// Masked keys never count; masked positions' queries do not either when a
// group has as many queries as keys (a padded self-attention batch), and
// do in cross-attention. The raw CPU loop (one float32 head) and the
// LibTorch pass (here bfloat16 inputs) agree.
TEST(FavorPlusPlusTest, GroupStatisticsLeaveOutPaddingOnBothPaths) {
  const FeatureContext context = Context();
  const QueriesAndKeys self = Inputs(30, 30, 4);
  const QueriesAndKeys cross = Inputs(20, 30, 5);
  at::Tensor keep = at::ones({30}, at::kBool);
  keep.narrow(0, 22, 8).fill_(false);
  const auto head = [](const at::Tensor& t) { return t.unsqueeze(0); };
  const auto bf16 = [](const at::Tensor& t) {
    return t.to(at::kBFloat16).unsqueeze(0);
  };
  std::vector<HeadGroup> groups = {Group(head(self.q), head(self.k), keep),
                                   Group(head(cross.q), head(cross.k), keep),
                                   Group(bf16(self.q), bf16(self.k), keep)};
  SetFavorPlusPlusLogits(context, 8, groups, /*parallel=*/true);
  const double self_a =
      FavorPlusPlusCoefficient(self.q.narrow(0, 0, 22), self.k.narrow(0, 0, 22))
          ->item<double>();
  const double cross_a =
      FavorPlusPlusCoefficient(cross.q, cross.k.narrow(0, 0, 22))
          ->item<double>();
  EXPECT_NEAR(GroupA(groups[0]), self_a, 1e-6);
  EXPECT_NEAR(GroupA(groups[1]), cross_a, 1e-6);
  // bfloat16 rounds the inputs (8 bits): A follows to about 1%.
  EXPECT_NEAR(GroupA(groups[2]), self_a, 1e-2 * std::abs(self_a));
  // The bias is A‖ω‖² per feature.
  EXPECT_TRUE(at::allclose(groups[0].logits.bias.view(-1),
                           context.row_squared_norms() * GroupA(groups[0]),
                           1e-4, 1e-6));
}

TEST(FavorPlusPlusTest, GroupWithoutKeysGetsFavorPlus) {
  const FeatureContext context = Context();
  const QueriesAndKeys in = Inputs(6, 6, 6);
  std::vector<HeadGroup> groups = {
      Group(in.q.unsqueeze(0), in.k.unsqueeze(0), at::zeros({6}, at::kBool))};
  SetFavorPlusPlusLogits(context, 8, groups, /*parallel=*/false);
  EXPECT_EQ(GroupA(groups[0]), 0.0);
}

}  // namespace
}  // namespace favor::attention
