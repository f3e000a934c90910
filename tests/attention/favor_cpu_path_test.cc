// The fused FAVOR+ CPU path against the FAVOR+ definitions computed here in
// double, on both of its product back ends (cpu::Gemm and the BLAS); and
// FAVOR++ on it, whose logits B·u + A‖ω‖² replace u in those definitions.
#include "server/attention/favor_cpu_path.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "server/attention/cpu_gemm.h"
#include "server/attention/cpu_gemm_bf16.h"
#include "server/attention/projection.h"

namespace favor::attention {
namespace {

constexpr int64_t kValueDim = 8, kFeatures = 32, kTokens = 150;
constexpr float kEpsilon = 1e-3f;
// A FAVOR++ coefficient of the size A* takes for unit-variance inputs.
constexpr double kFavorPlusPlusA = -0.12;

FeatureContext Context(Kernel kernel = Kernel::kFavorPositive,
                       int64_t dim = 16) {
  ProjectionOptions options;
  options.num_features = kFeatures;
  options.head_dim = dim;
  options.seed = 5;
  return *FeatureContext::Create(kernel, *DrawProjection(options), dim,
                                 at::kCPU, kEpsilon);
}

enum class Keys { kPlain, kMasked, kGrowing };

// kGrowing ends with keys along the first feature's direction whose u is so
// much larger than the others' that the running shift must be raised by
// more than cpu::kMaxShiftGap mid-range, rescaling the sums already taken,
// while their features stay well inside float's range (which needs d = 64).
HeadGroup Group(const FeatureContext& context, Keys keys) {
  at::manual_seed(3);
  const int64_t dim = context.scaled_projection_t().size(0);
  HeadGroup group{
      at::randn({1, kTokens, dim}),       at::randn({1, kTokens, dim}),
      at::randn({1, kTokens, kValueDim}), at::Tensor(),
      at::zeros({1, kTokens, kValueDim}), {}};
  if (keys == Keys::kMasked) group.keep = at::rand({kTokens}) > 0.3;
  if (keys == Keys::kGrowing) {
    const at::Tensor omega = context.scaled_projection_t().select(1, 0);
    group.key.slice(1, kTokens - 10).copy_(34.0 * omega / omega.norm());
  }
  if (context.kernel() == Kernel::kFavorPlusPlus) {
    group.logits =
        context.FavorPlusPlusLogits(at::full({1, 1, 1}, kFavorPlusPlusA));
  }
  return group;
}

AttentionOptions SmallSteps() {
  AttentionOptions options;
  options.chunk_tokens = 16;  // short sequences cross many steps
  return options;
}

// u = x'ᵀω (for FAVOR++, B·x'ᵀω + A‖ω‖², B = √(1 − 4A)) and ‖x'‖²/2 for
// every token (and feature), in double. The features are exp(u − ‖x'‖²/2 −
// shift), where the shift is the maximum of u (over all kept keys, or over
// each query's row), as the reference implementation takes it.
struct Projected {
  at::Tensor u;          // (L, m)
  at::Tensor half_norm;  // (L, 1)
};
Projected Project(const FeatureContext& context, const at::Tensor& x) {
  const at::Tensor xd = x[0].to(at::kDouble);
  const double dim = static_cast<double>(x.size(2));
  const at::Tensor w_t = context.scaled_projection_t().to(at::kDouble);
  at::Tensor u = at::matmul(xd, w_t);
  if (context.kernel() == Kernel::kFavorPlusPlus) {
    // ‖ω‖² of the unscaled rows: w_t holds d^-1/4 ω.
    const at::Tensor omega_squared = w_t.square().sum(0) * std::sqrt(dim);
    u = std::sqrt(1.0 - 4.0 * kFavorPlusPlusA) * u +
        kFavorPlusPlusA * omega_squared;
  }
  return {u, xd.pow(2).sum(-1, true) / (2.0 * std::sqrt(dim))};
}

// [v | 1] with masked rows zeroed, (L, dv + 1), in double.
at::Tensor KeptValuesWithOnes(const HeadGroup& group) {
  at::Tensor v = at::cat(
      {group.value[0].to(at::kDouble), at::ones({kTokens, 1}, at::kDouble)},
      -1);
  if (group.keep.defined()) v = v * group.keep.to(at::kDouble).unsqueeze(1);
  return v;
}

double MaxRelativeError(const at::Tensor& actual, const at::Tensor& expected) {
  const at::Tensor e = expected.to(at::kDouble);
  return ((actual.to(at::kDouble) - e).abs().max() / e.abs().max())
      .item<double>();
}

// The group's queries, keys, values and output in bfloat16 (its mask and
// logit map unchanged): what a bfloat16 model hands to attention.
HeadGroup InBFloat16(const HeadGroup& group) {
  HeadGroup half = group;
  half.query = group.query.to(at::kBFloat16);
  half.key = group.key.to(at::kBFloat16);
  half.value = group.value.to(at::kBFloat16);
  half.out = group.out.to(at::kBFloat16);
  return half;
}

// A range's key sums by the definition, in double: the shift (the largest
// u of a kept key), Σφ(k)[v | 1]ᵀ with that shift and Σ[v | 1].
struct KeyDefinition {
  double shift;
  at::Tensor sums, value_sums;
};
KeyDefinition DefineKeySums(const FeatureContext& context,
                            const HeadGroup& group, int64_t begin,
                            int64_t end) {
  const Projected keys = Project(context, group.key);
  const at::Tensor u = keys.u.slice(0, begin, end);
  const at::Tensor v = KeptValuesWithOnes(group).slice(0, begin, end);
  at::Tensor kept = at::ones({end - begin, 1}, at::kBool);
  if (group.keep.defined()) kept = group.keep.slice(0, begin, end).unsqueeze(1);
  const double shift =
      u.masked_fill(kept.logical_not(), -1e300).max().item<double>();
  const at::Tensor phi =
      (u - keys.half_norm.slice(0, begin, end) - shift).exp() *
      kept.to(at::kDouble);
  return {shift, at::matmul(phi.t(), v), v.sum(0)};
}

// Every query's output by the definition given the query state, in double.
at::Tensor DefineOutputs(const FeatureContext& context, const HeadGroup& group,
                         const at::Tensor& state) {
  const Projected queries = Project(context, group.query);
  const at::Tensor row_max = std::get<0>(queries.u.max(-1, true));
  const at::Tensor phi =
      (queries.u - queries.half_norm - row_max).exp() + kEpsilon;
  const at::Tensor both = at::matmul(phi, state[0].to(at::kDouble));
  return both.narrow(1, 0, kValueDim) / both.narrow(1, kValueDim, 1);
}

class FavorCpuPathTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { cpu::SetFastGemmEnabled(GetParam()); }
  void TearDown() override { cpu::SetFastGemmEnabled(true); }
};

TEST_P(FavorCpuPathTest, KeySumsMatchTheDefinitionOnAnyRange) {
  for (const Kernel kernel : {Kernel::kFavorPositive, Kernel::kFavorPlusPlus})
    for (const Keys kind : {Keys::kPlain, Keys::kMasked, Keys::kGrowing}) {
      SCOPED_TRACE(KernelName(kernel));
      const FeatureContext context =
          Context(kernel, kind == Keys::kGrowing ? 64 : 16);
      const HeadGroup group = Group(context, kind);
      const int64_t begin = 7, end = kTokens - 5;
      const KeyState state =
          AccumulateKeysFavorCpu(context, SmallSteps(), group, begin, end);
      const KeyDefinition expected = DefineKeySums(context, group, begin, end);
      const double shift = expected.shift;
      // FAVOR++'s logits carry one more float rounding (B·u + A‖ω‖²), up
      // to 2^-24 of their size, about 92 here.
      const double shift_bound =
          kernel == Kernel::kFavorPositive ? 1e-5 : 1e-5 + 6e-8 * shift;
      EXPECT_NEAR(state.shift.item<double>(), shift, shift_bound);
      EXPECT_LT(MaxRelativeError(state.sums[0], expected.sums), 1e-5);
      EXPECT_LT(
          MaxRelativeError(state.value_sums.view({-1}), expected.value_sums),
          1e-6);
    }
}

TEST_P(FavorCpuPathTest, QueriesMatchTheDefinition) {
  for (const Kernel kernel : {Kernel::kFavorPositive, Kernel::kFavorPlusPlus}) {
    SCOPED_TRACE(KernelName(kernel));
    const FeatureContext context = Context(kernel);
    const HeadGroup group = Group(context, Keys::kPlain);
    const at::Tensor state = at::rand({1, kFeatures, kValueDim + 1}) + 0.1;
    const int64_t begin = 3, end = kTokens - 9;
    QueriesFavorCpu(context, SmallSteps(), group, state, begin, end);
    const at::Tensor expected = DefineOutputs(context, group, state);
    EXPECT_LT(MaxRelativeError(group.out[0].slice(0, begin, end),
                               expected.slice(0, begin, end)),
              1e-5);
    // Rows outside the range are not written.
    EXPECT_EQ(group.out[0].slice(0, 0, begin).abs().max().item<float>(), 0.0f);
    EXPECT_EQ(group.out[0].slice(0, end).abs().max().item<float>(), 0.0f);
  }
}

// The group's queries, keys and values as the model hands them over: column
// slices of one fused (1, L, d + d + dv + 3) product, so that each row is
// far from the next (the output stays contiguous).
HeadGroup InOneFusedProduct(const HeadGroup& group) {
  const int64_t d = group.query.size(2);
  const at::Tensor fused = at::full({1, kTokens, 2 * d + kValueDim + 3}, NAN);
  HeadGroup sliced = group;
  sliced.query = fused.narrow(2, 0, d);
  sliced.key = fused.narrow(2, d, d);
  sliced.value = fused.narrow(2, 2 * d, kValueDim);
  sliced.query.copy_(group.query);
  sliced.key.copy_(group.key);
  sliced.value.copy_(group.value);
  return sliced;
}

TEST_P(FavorCpuPathTest, ReadsRowsOfAFusedProduct) {
  for (const Keys kind : {Keys::kPlain, Keys::kMasked}) {
    const FeatureContext context = Context();
    const HeadGroup group = InOneFusedProduct(Group(context, kind));
    ASSERT_TRUE(FavorCpuPathApplies(context, group));
    const KeyState state =
        AccumulateKeysFavorCpu(context, SmallSteps(), group, 0, kTokens);
    const KeyDefinition expected = DefineKeySums(context, group, 0, kTokens);
    EXPECT_NEAR(state.shift.item<double>(), expected.shift, 1e-5);
    EXPECT_LT(MaxRelativeError(state.sums[0], expected.sums), 1e-5);
    EXPECT_LT(
        MaxRelativeError(state.value_sums.view({-1}), expected.value_sums),
        1e-6);
    const at::Tensor query_state =
        at::rand({1, kFeatures, kValueDim + 1}) + 0.1;
    QueriesFavorCpu(context, SmallSteps(), group, query_state, 0, kTokens);
    EXPECT_LT(MaxRelativeError(group.out[0],
                               DefineOutputs(context, group, query_state)),
              1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, FavorCpuPathTest,
                         ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "CpuGemm" : "Blas";
                         });

TEST(FavorCpuPathAppliesTest, OnlyToFloatFavorPlusOneHeadUnitStrides) {
  const FeatureContext favor = Context();
  const HeadGroup group = Group(favor, Keys::kPlain);
  EXPECT_TRUE(FavorCpuPathApplies(favor, group));
  EXPECT_TRUE(FavorCpuPathApplies(Context(Kernel::kFavorPlusPlus), group));
  EXPECT_FALSE(FavorCpuPathApplies(Context(Kernel::kFavorHyperbolic), group));
  HeadGroup two_heads = group;
  two_heads.key = at::randn({2, kTokens, 16});
  EXPECT_FALSE(FavorCpuPathApplies(favor, two_heads));
  HeadGroup half = group;
  half.query = group.query.to(at::kBFloat16);
  EXPECT_FALSE(FavorCpuPathApplies(favor, half));
  const HeadGroup bf16 = InBFloat16(group);
  EXPECT_EQ(FavorCpuPathApplies(favor, bf16), cpu::GemmBF16IsFast());
  cpu::SetFastGemmBF16Enabled(false);  // LibTorch's path, not a slow loop
  EXPECT_FALSE(FavorCpuPathApplies(favor, bf16));
  cpu::SetFastGemmBF16Enabled(true);
  HeadGroup strided = group;
  strided.value = at::randn({1, kTokens, 2 * kValueDim}).slice(2, 0, {}, 2);
  EXPECT_FALSE(FavorCpuPathApplies(favor, strided));
}

// The bfloat16 path against the same definitions in double, evaluated on
// the bfloat16 inputs themselves (so that only the path's own roundings
// count). Those roundings: the projection ω and the key features φ(k) (or,
// for queries, φ(q) and the state S) are rounded to bfloat16, a relative
// error of at most 2^-9 each (8-bit mantissa), and the output once more.
// A rounded ω moves u = x·ω by up to 2^-9·Σ|x_i ω_i|, a few hundredths at
// these sizes, and exp turns that into the same relative error in a
// feature; the sums average the independent roundings of many terms.
// Measured: up to 8e-3 of the largest element (2e-3 to 8e-3 over these
// cases), so 2e-2 leaves room for other inputs while a lost rescale or a
// transposed operand is still caught. The shift is the largest u, off by up to
// 2^-9 of Σ|x_i ω_i| ≤ 2^-8·(|u| + 1) here; shift and sums move together, so
// the settled sums are still within the bound.
class FavorCpuPathBF16Test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu::GemmBF16IsFast()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  }
};

TEST_F(FavorCpuPathBF16Test, KeySumsMatchTheDefinitionOnAnyRange) {
  for (const Kernel kernel : {Kernel::kFavorPositive, Kernel::kFavorPlusPlus})
    for (const Keys kind : {Keys::kPlain, Keys::kMasked, Keys::kGrowing}) {
      SCOPED_TRACE(KernelName(kernel));
      const FeatureContext context =
          Context(kernel, kind == Keys::kGrowing ? 64 : 16);
      const HeadGroup group = InBFloat16(Group(context, kind));
      ASSERT_TRUE(FavorCpuPathApplies(context, group));
      const int64_t begin = 7, end = kTokens - 5;
      const KeyState state =
          AccumulateKeysFavorCpu(context, SmallSteps(), group, begin, end);
      const KeyDefinition expected = DefineKeySums(context, group, begin, end);
      const double shift = expected.shift;
      EXPECT_NEAR(state.shift.item<double>(), shift,
                  std::ldexp(std::abs(shift) + 1.0, -8));
      // Settled on the path's own shift, as the outputs use them.
      const at::Tensor settled = state.sums[0].to(at::kDouble) *
                                 std::exp(state.shift.item<double>() - shift);
      EXPECT_LT(MaxRelativeError(settled, expected.sums), 2e-2);
      EXPECT_LT(
          MaxRelativeError(state.value_sums.view({-1}), expected.value_sums),
          1e-6);
    }
}

TEST_F(FavorCpuPathBF16Test, QueriesMatchTheDefinition) {
  for (const Kernel kernel : {Kernel::kFavorPositive, Kernel::kFavorPlusPlus}) {
    SCOPED_TRACE(KernelName(kernel));
    const FeatureContext context = Context(kernel);
    const HeadGroup group = InBFloat16(Group(context, Keys::kPlain));
    const at::Tensor state = at::rand({1, kFeatures, kValueDim + 1}) + 0.1;
    const int64_t begin = 3, end = kTokens - 9;
    QueriesFavorCpu(context, SmallSteps(), group, state, begin, end);
    const at::Tensor expected = DefineOutputs(context, group, state);
    EXPECT_LT(MaxRelativeError(group.out[0].slice(0, begin, end),
                               expected.slice(0, begin, end)),
              2e-2);
    EXPECT_EQ(group.out[0].slice(0, 0, begin).abs().max().item<float>(), 0.0f);
    EXPECT_EQ(group.out[0].slice(0, end).abs().max().item<float>(), 0.0f);
  }
}

// The bfloat16 path follows the float32 path on the same (bfloat16-valued)
// inputs, keys and queries together, to the bounds above.
TEST_F(FavorCpuPathBF16Test, FollowsTheFloat32Path) {
  for (const Kernel kernel : {Kernel::kFavorPositive, Kernel::kFavorPlusPlus}) {
    SCOPED_TRACE(KernelName(kernel));
    const FeatureContext context = Context(kernel);
    HeadGroup half = InBFloat16(Group(context, Keys::kMasked));
    HeadGroup full = half;
    full.query = half.query.to(at::kFloat);
    full.key = half.key.to(at::kFloat);
    full.value = half.value.to(at::kFloat);
    full.out = half.out.to(at::kFloat);
    for (HeadGroup* group : {&half, &full}) {
      const KeyState keys =
          AccumulateKeysFavorCpu(context, SmallSteps(), *group, 0, kTokens);
      const at::Tensor state = keys.sums + context.epsilon() * keys.value_sums;
      QueriesFavorCpu(context, SmallSteps(), *group, state, 0, kTokens);
    }
    EXPECT_LT(MaxRelativeError(half.out, full.out), 2e-2);
  }
}

}  // namespace
}  // namespace favor::attention
