#include "server/attention/attention.h"

#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "server/attention/cpu_gemm.h"
#include "server/attention/cpu_gemm_bf16.h"
#include "server/attention/feature_map.h"
#include "server/attention/projection.h"
#include "server/attention/torch_compat.h"
#include "tests/attention/aten_calls.h"

namespace favor::attention {
namespace {

constexpr int64_t kHeads = 3, kDim = 16, kValueDim = 8, kFeatures = 32;
const Kernel kLinearKernels[] = {Kernel::kFavorPositive,
                                 Kernel::kFavorPlusPlus,
                                 Kernel::kFavorHyperbolic,
                                 Kernel::kTrigonometric,
                                 Kernel::kRelu,
                                 Kernel::kEluPlusOne,
                                 Kernel::kExp};

at::Tensor TestProjection() {
  ProjectionOptions options;
  options.num_features = kFeatures;
  options.head_dim = kDim;
  options.seed = 11;
  return *DrawProjection(options);
}

// max |a − b| / max |b|: the error relative to the output's scale.
double RelativeError(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor bd = b.to(at::kDouble);
  return ((a.to(at::kDouble) - bd).abs().max() /
          bd.abs().max().clamp_min(1e-30))
      .item<double>();
}

AttentionOptions Options(Kernel kernel, bool causal) {
  AttentionOptions options;
  options.kernel = kernel;
  options.causal = causal;
  // Small chunks and tiles so that short test sequences cross many of them.
  options.chunk_tokens = 16;
  options.causal_chunk_tokens = 8;
  options.exact_query_tile = 16;
  options.exact_key_tile = 24;
  return options;
}

const AttentionOptions::CpuSchedule kSchedules[] = {
    AttentionOptions::CpuSchedule::kPerHead,
    AttentionOptions::CpuSchedule::kBatched};

const char* ScheduleName(AttentionOptions::CpuSchedule schedule) {
  return schedule == AttentionOptions::CpuSchedule::kBatched ? " batched"
                                                             : " per head";
}

at::Tensor AttendOrDie(const at::Tensor& q, const at::Tensor& k,
                       const at::Tensor& v, const at::Tensor& mask,
                       const AttentionOptions& options) {
  auto out = Attend(q, k, v, TestProjection(), mask, options);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : at::Tensor();
}

// softmax(QKᵀ/√d)V, in double, straight from the definition.
at::Tensor DirectSoftmax(const at::Tensor& q, const at::Tensor& k,
                         const at::Tensor& v, bool causal) {
  at::Tensor scores =
      at::matmul(q.to(at::kDouble), k.to(at::kDouble).transpose(-1, -2)) /
      std::sqrt(double(q.size(-1)));
  if (causal) {
    const int64_t lq = q.size(-2), lk = k.size(-2);
    scores.masked_fill_(at::ones({lq, lk}, at::kBool).triu(1), -INFINITY);
  }
  return at::matmul(at::softmax(scores, -1), v.to(at::kDouble));
}

// Linear attention as an explicit L×L computation with the same features
// (FeatureMap's query and key roles), in double. Causal: row i is query i's
// attention over keys 0..i alone, their features formed (and, with ε,
// shifted) from those keys alone, so that no later key takes part. FAVOR++'s
// A is `a` where given, else the whole sequence's (each (batch, head)
// matrix's), for causal attention too.
at::Tensor ExplicitLinear(Kernel kernel, const at::Tensor& q,
                          const at::Tensor& k, const at::Tensor& v, bool causal,
                          at::Tensor a = at::Tensor()) {
  if (kernel == Kernel::kExp) {
    // Shen et al.: softmax of each query over channels, of each key channel
    // over the keys it may see.
    const at::Tensor rq = at::softmax(q.to(at::kDouble), -1);
    const at::Tensor kd = k.to(at::kDouble), vd = v.to(at::kDouble);
    if (!causal) {
      return at::matmul(rq,
                        at::matmul(at::softmax(kd, -2).transpose(-1, -2), vd));
    }
    std::vector<at::Tensor> rows;
    for (int64_t i = 0; i < q.size(-2); ++i) {
      const at::Tensor prefix = at::softmax(kd.narrow(-2, 0, i + 1), -2);
      const at::Tensor state =
          at::matmul(prefix.transpose(-1, -2), vd.narrow(-2, 0, i + 1));
      rows.push_back(at::matmul(rq.narrow(-2, i, 1), state));
    }
    return at::cat(rows, -2);
  }
  const at::Tensor w = TestProjection();
  if (kernel == Kernel::kFavorPlusPlus && !a.defined()) {
    a = *FavorPlusPlusCoefficient(q, k);
  }
  const at::Tensor fq =
      FeatureMap(q, kernel, w, FeatureRole::kQuery, 1e-4f, a)->to(at::kDouble);
  const at::Tensor vd = v.to(at::kDouble);
  if (!causal) {
    const at::Tensor fk =
        FeatureMap(k, kernel, w, FeatureRole::kKey, 1e-4f, a)->to(at::kDouble);
    const at::Tensor scores = at::matmul(fq, fk.transpose(-1, -2));
    return at::matmul(scores, vd) / scores.sum(-1, true);
  }
  std::vector<at::Tensor> rows;
  for (int64_t i = 0; i < q.size(-2); ++i) {
    const at::Tensor fk = FeatureMap(k.narrow(-2, 0, i + 1), kernel, w,
                                     FeatureRole::kKey, 1e-4f, a)
                              ->to(at::kDouble);
    const at::Tensor scores =
        at::matmul(fq.narrow(-2, i, 1), fk.transpose(-1, -2));
    rows.push_back(at::matmul(scores, vd.narrow(-2, 0, i + 1)) /
                   scores.sum(-1, true));
  }
  return at::cat(rows, -2);
}

std::string KernelTestName(const testing::TestParamInfo<Kernel>& param_info) {
  std::string name(KernelName(param_info.param));
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

struct Inputs {
  at::Tensor q, k, v;
};

// Trig features can be negative, so its denominators can come near zero,
// where any two summation orders disagree; small inputs keep its estimate
// (and so its denominators) close to the positive softmax one.
double InputScale(Kernel kernel) {
  return kernel == Kernel::kTrigonometric ? 0.3 : 1.0;
}

Inputs RandomInputs(int64_t batch, int64_t lq, int64_t lk, uint64_t seed,
                    double scale = 1.0) {
  at::manual_seed(seed);
  return {at::randn({batch, kHeads, lq, kDim}) * scale,
          at::randn({batch, kHeads, lk, kDim}) * scale,
          at::randn({batch, kHeads, lk, kValueDim})};
}

TEST(ExactAttentionTest, MatchesDirectSoftmax) {
  for (bool causal : {false, true}) {
    const Inputs in = RandomInputs(2, 100, 100, 1);
    const at::Tensor out = AttendOrDie(in.q, in.k, in.v, at::Tensor(),
                                       Options(Kernel::kSoftmaxExact, causal));
    EXPECT_LT(RelativeError(out, DirectSoftmax(in.q, in.k, in.v, causal)), 1e-5)
        << "causal=" << causal;
  }
}

// softmax over the keys j with |i − j| ≤ radius (and j ≤ i when causal),
// in double, from the definition.
at::Tensor DirectWindowedSoftmax(const at::Tensor& q, const at::Tensor& k,
                                 const at::Tensor& v, int64_t radius,
                                 bool causal) {
  at::Tensor scores =
      at::matmul(q.to(at::kDouble), k.to(at::kDouble).transpose(-1, -2)) /
      std::sqrt(double(q.size(-1)));
  const at::Tensor i = at::arange(q.size(-2)).view({-1, 1});
  const at::Tensor j = at::arange(k.size(-2)).view({1, -1});
  at::Tensor dropped = (i - j).abs() > radius;
  if (causal) dropped.logical_or_(j > i);
  scores.masked_fill_(dropped, -INFINITY);
  return at::matmul(at::softmax(scores, -1), v.to(at::kDouble));
}

// Sliding-window attention (ModernBERT's local layers) equals the masked
// definition at radii inside one tile, across tiles and past the sequence,
// causal or not, with padded keys, on both schedules; packed sequences each
// see only their own window.
TEST(ExactAttentionTest, SlidingWindowMatchesTheMaskedDefinition) {
  const Inputs in = RandomInputs(2, 100, 100, 21);
  at::Tensor mask = at::zeros({2, 100}, at::kBool);
  mask[1].narrow(0, 80, 20).fill_(true);
  for (const int64_t radius : {0, 3, 16, 40, 99, 500}) {
    for (const bool causal : {false, true}) {
      for (const AttentionOptions::CpuSchedule schedule : kSchedules) {
        AttentionOptions options = Options(Kernel::kSoftmaxExact, causal);
        options.window_radius = radius;
        options.cpu_schedule = schedule;
        SCOPED_TRACE(::testing::Message() << "radius " << radius << " causal "
                                          << causal << ScheduleName(schedule));
        const at::Tensor out =
            AttendOrDie(in.q, in.k, in.v, at::Tensor(), options);
        EXPECT_LT(RelativeError(out, DirectWindowedSoftmax(in.q, in.k, in.v,
                                                           radius, causal)),
                  1e-5);
        // Padded keys of sequence 1 (its last 20) are never attended.
        const at::Tensor padded = AttendOrDie(in.q, in.k, in.v, mask, options);
        const at::Tensor head = in.q.narrow(0, 1, 1).narrow(2, 0, 80);
        const at::Tensor want = DirectWindowedSoftmax(
            head, in.k.narrow(0, 1, 1).narrow(2, 0, 80),
            in.v.narrow(0, 1, 1).narrow(2, 0, 80), radius, causal);
        EXPECT_LT(RelativeError(padded.narrow(0, 1, 1).narrow(2, 0, 80), want),
                  1e-5);
      }
    }
  }
  const std::vector<int64_t> offsets = {0, 30, 100};
  AttentionOptions options = Options(Kernel::kSoftmaxExact, false);
  options.window_radius = 7;
  const auto packed_view = [](const at::Tensor& x) {
    return x[0].permute({1, 0, 2}).contiguous();  // (L, H, d)
  };
  auto packed = AttendPacked(packed_view(in.q), packed_view(in.k),
                             packed_view(in.v), offsets, offsets,
                             TestProjection(), options);
  ASSERT_TRUE(packed.ok()) << packed.status();
  for (size_t s = 0; s + 1 < offsets.size(); ++s) {
    const int64_t begin = offsets[s], length = offsets[s + 1] - begin;
    const auto part = [&](const at::Tensor& x) {
      return x.narrow(0, 0, 1).narrow(2, begin, length);
    };
    const at::Tensor want =
        DirectWindowedSoftmax(part(in.q), part(in.k), part(in.v), 7, false);
    EXPECT_LT(RelativeError(packed->narrow(0, begin, length).permute({1, 0, 2}),
                            want[0]),
              1e-5)
        << "sequence " << s;
  }
}

TEST(ExactAttentionTest, SlidingWindowsAreExactSoftmaxOnly) {
  const Inputs in = RandomInputs(1, 8, 8, 22);
  AttentionOptions options = Options(Kernel::kFavorPositive, false);
  options.window_radius = 2;
  auto out = Attend(in.q, in.k, in.v, TestProjection(), at::Tensor(), options);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()),
              ::testing::HasSubstr("exact softmax kernel only"));
  options.kernel = Kernel::kSoftmaxExact;
  options.window_radius = -2;
  EXPECT_FALSE(
      Attend(in.q, in.k, in.v, TestProjection(), at::Tensor(), options).ok());
}

TEST(ExactAttentionTest, CrossAttentionMatchesDirectSoftmax) {
  const Inputs in = RandomInputs(2, 37, 90, 2);
  const at::Tensor out = AttendOrDie(in.q, in.k, in.v, at::Tensor(),
                                     Options(Kernel::kSoftmaxExact, false));
  EXPECT_LT(RelativeError(out, DirectSoftmax(in.q, in.k, in.v, false)), 1e-5);
}

// Logits below −1e30 (finite inputs, d = 1, q·k = −1e32) are still a
// softmax: equal logits give V's mean, far apart ones the largest's value.
// The running maximum once started at −1e30 and turned such rows to zeros.
TEST(ExactAttentionTest, LogitsFarBelowMinusOneE30AreStillASoftmax) {
  const at::Tensor q = at::full({1, 1, 3, 1}, 1e16f);
  at::Tensor k = at::full({1, 1, 3, 1}, -1e16f);
  const at::Tensor v = at::arange(6, at::kFloat).view({1, 1, 3, 2});
  for (const bool causal : {false, true}) {
    const at::Tensor out = AttendOrDie(q, k, v, at::Tensor(),
                                       Options(Kernel::kSoftmaxExact, causal));
    // Causal, row i averages the values of keys 0..i; else all three.
    const at::Tensor expected =
        causal ? at::tensor({0.f, 1.f, 1.f, 2.f, 2.f, 3.f})
               : at::tensor({2.f, 3.f, 2.f, 3.f, 2.f, 3.f});
    EXPECT_TRUE(at::allclose(out.flatten(), expected)) << out << causal;
  }
  k[0][0][2][0] = -1e15f;  // key 2's logit, −1e31, is far above the others
  const at::Tensor out = AttendOrDie(q, k, v, at::Tensor(),
                                     Options(Kernel::kSoftmaxExact, false));
  EXPECT_TRUE(
      at::allclose(out.flatten(), at::tensor({4.f, 5.f, 4.f, 5.f, 4.f, 5.f})))
      << out;
}

// LibTorch 2.x's at::scaled_dot_product_attention runs the softmax kernel
// (exact_attention.h): it is called, and it equals Favor's tiled kernel with
// and without padding, causal or not, on both schedules, in float32 and
// bfloat16 (a fully padded sequence gets zeros from both). On LibTorch 1.13
// there is none, and the test says so; trixie.Cpu runs it on 2.6.
TEST(ExactAttentionTest, LibTorchsAttentionEqualsTheTiledKernel) {
  if (!torch_compat::kHasScaledDotProductAttention) {
    GTEST_SKIP() << "LibTorch " << TORCH_VERSION
                 << " has no scaled_dot_product_attention (ctest trixie.Cpu "
                    "runs this on 2.6)";
  }
  const Inputs in = RandomInputs(3, 70, 70, 13);
  at::Tensor mask = at::zeros({3, 70}, at::kBool);
  mask[1].narrow(0, 40, 30).fill_(true);
  mask[2].fill_(true);
  for (const bool masked : {false, true}) {
    for (const bool causal : {false, true}) {
      for (const AttentionOptions::CpuSchedule schedule : kSchedules) {
        for (const at::ScalarType type : {at::kFloat, at::kBFloat16}) {
          AttentionOptions options = Options(Kernel::kSoftmaxExact, causal);
          options.cpu_schedule = schedule;
          const at::Tensor padding = masked ? mask : at::Tensor();
          const auto attend = [&] {
            return AttendOrDie(in.q.to(type), in.k.to(type), in.v.to(type),
                               padding, options);
          };
          at::Tensor on_libtorch;
          // The per-head schedule runs its groups on the intra-op
          // threads: every thread's calls are looked at.
          const auto calls = attention_testing::AtenCalls(
              [&] { on_libtorch = attend(); },
              attention_testing::Threads::kEvery);
          EXPECT_GT(calls.count("aten::scaled_dot_product_attention"), 0u);
          options.softmax_on_libtorch = false;
          const at::Tensor tiled = attend();
          const std::string where =
              std::string(masked ? "masked" : "unmasked") +
              (causal ? " causal " : " ") + c10::toString(type) +
              ScheduleName(schedule);
          EXPECT_LT(RelativeError(on_libtorch, tiled),
                    type == at::kFloat ? 1e-5 : 2e-2)
              << where;
          if (masked) {
            EXPECT_TRUE(at::equal(on_libtorch[2],
                                  at::zeros_like(on_libtorch[2])))
                << where;
          }
        }
      }
    }
  }
}

class LinearKernelTest : public testing::TestWithParam<Kernel> {};

// Also with more keys than one range of key sums holds (4,096,
// kKeyRangeTokens in linear_attention.cc): the sums of three ranges,
// computed apart and merged (each at its own shift where the kernel has
// one), then the queries.
TEST_P(LinearKernelTest, NonCausalMatchesExplicitComputation) {
  struct Shape {
    int64_t batch, queries, keys;
  };
  for (const Shape shape : {Shape{2, 100, 100}, Shape{1, 40, 9000}}) {
    SCOPED_TRACE(std::to_string(shape.keys) + " keys");
    const Inputs in = RandomInputs(shape.batch, shape.queries, shape.keys, 3,
                                   InputScale(GetParam()));
    const at::Tensor out =
        AttendOrDie(in.q, in.k, in.v, at::Tensor(), Options(GetParam(), false));
    EXPECT_LT(
        RelativeError(out, ExplicitLinear(GetParam(), in.q, in.k, in.v, false)),
        1e-5);
  }
}

TEST_P(LinearKernelTest, CausalMatchesExplicitMaskedComputation) {
  const Inputs in = RandomInputs(2, 100, 100, 4, InputScale(GetParam()));
  const at::Tensor out =
      AttendOrDie(in.q, in.k, in.v, at::Tensor(), Options(GetParam(), true));
  EXPECT_LT(
      RelativeError(out, ExplicitLinear(GetParam(), in.q, in.k, in.v, true)),
      1e-5);
}

// One kernel of CausalOutputsDoNotDependOnLaterTokens (below).
void CheckCausalPrefixIsItsOwn(Kernel kernel) {
  SCOPED_TRACE(KernelName(kernel));
  constexpr int64_t kLength = 64, kCut = 43;
  const AttentionOptions options = Options(kernel, true);
  ASSERT_NE(kCut % options.causal_chunk_tokens, 0);
  const Inputs in = RandomInputs(1, kLength, kLength, 9, InputScale(kernel));
  const at::Tensor before =
      AttendOrDie(in.q, in.k, in.v, at::Tensor(), options);
  Inputs changed{in.q.clone(), in.k.clone(), in.v.clone()};
  changed.q.narrow(2, kCut, kLength - kCut).normal_();
  changed.k.narrow(2, kCut, kLength - kCut).mul_(3.0);
  changed.v.narrow(2, kCut, kLength - kCut).normal_();
  const at::Tensor after =
      AttendOrDie(changed.q, changed.k, changed.v, at::Tensor(), options);
  EXPECT_LT(RelativeError(after.narrow(2, 0, kCut), before.narrow(2, 0, kCut)),
            1e-6);
  EXPECT_GT(RelativeError(after.narrow(2, kCut, kLength - kCut),
                          before.narrow(2, kCut, kLength - kCut)),
            1e-3)
      << "the later tokens changed nothing: the test proves nothing";
}

// Causal attention is causal with ε too: the outputs before a position do
// not change with the queries, keys and values after it, even keys whose
// projections are far above every earlier one (a key shift taken over the
// whole sequence moved them by up to half: docs/attention.md). FAVOR++ is
// left out: its A is the whole sequence's, by a documented choice. The cut
// falls inside a causal chunk, whose earlier queries must not see it either.
TEST(AttentionTest, CausalOutputsDoNotDependOnLaterTokens) {
  for (const Kernel kernel : kLinearKernels) {
    if (kernel != Kernel::kFavorPlusPlus) CheckCausalPrefixIsItsOwn(kernel);
  }
}

TEST_P(LinearKernelTest, CrossAttentionMatchesExplicitComputation) {
  const Inputs in = RandomInputs(1, 45, 70, 5, InputScale(GetParam()));
  const at::Tensor out =
      AttendOrDie(in.q, in.k, in.v, at::Tensor(), Options(GetParam(), false));
  EXPECT_LT(
      RelativeError(out, ExplicitLinear(GetParam(), in.q, in.k, in.v, false)),
      1e-5);
}

TEST_P(LinearKernelTest, ChunkedEqualsUnchunked) {
  for (bool causal : {false, true}) {
    const Inputs in = RandomInputs(1, 200, 200, 6, InputScale(GetParam()));
    AttentionOptions small = Options(GetParam(), causal);
    small.chunk_tokens = 7;
    small.causal_chunk_tokens = 5;
    AttentionOptions whole = Options(GetParam(), causal);
    whole.chunk_tokens = whole.causal_chunk_tokens = 1 << 20;
    EXPECT_LT(RelativeError(AttendOrDie(in.q, in.k, in.v, at::Tensor(), small),
                            AttendOrDie(in.q, in.k, in.v, at::Tensor(), whole)),
              1e-5)
        << "causal=" << causal;
  }
}

INSTANTIATE_TEST_SUITE_P(AllLinearKernels, LinearKernelTest,
                         testing::ValuesIn(kLinearKernels), KernelTestName);

// The FAVOR+ CPU path runs its products on cpu::Gemm where the CPU has
// AVX-512 and on the BLAS elsewhere (or when tests turn the kernel off):
// both match the explicit computation, with the default step sizes, on
// sequences long enough to cross several 64-token steps, with padding.
TEST(AttentionTest, FavorCpuProductsOnGemmAndOnBlasMatchExplicit) {
  const Inputs in = RandomInputs(2, 300, 300, 12);
  at::Tensor mask = at::zeros({2, 300}, at::kBool);
  mask[1].narrow(0, 200, 100).fill_(true);
  for (Kernel kernel : {Kernel::kFavorPositive, Kernel::kFavorPlusPlus}) {
    AttentionOptions options;
    options.kernel = kernel;
    for (bool fast : {true, false}) {
      cpu::SetFastGemmEnabled(fast);
      const at::Tensor out = AttendOrDie(in.q, in.k, in.v, mask, options);
      cpu::SetFastGemmEnabled(true);
      for (int64_t b = 0; b < 2; ++b) {
        const int64_t keys = b == 0 ? 300 : 200;
        const at::Tensor q = in.q.narrow(0, b, 1);
        const at::Tensor k = in.k.narrow(0, b, 1).narrow(2, 0, keys);
        // FAVOR++'s statistic leaves out the queries at padded positions,
        // as it does the padded keys.
        at::Tensor a;
        if (kernel == Kernel::kFavorPlusPlus) {
          a = *FavorPlusPlusCoefficient(q.narrow(2, 0, keys), k);
        }
        const at::Tensor want = ExplicitLinear(
            kernel, q, k, in.v.narrow(0, b, 1).narrow(2, 0, keys), false, a);
        EXPECT_LT(RelativeError(out.narrow(0, b, 1), want), 1e-5)
            << KernelName(kernel) << " batch " << b
            << (fast ? " on cpu::Gemm" : " on the BLAS");
      }
    }
  }
}

class AllKernelsTest : public testing::TestWithParam<Kernel> {};

// Packed sequences, each with its own key sums and key max, give what each
// sequence gives alone, whatever it is packed with: the neighbours here have
// ten times larger keys, so a shared max would change the result. Batched
// (as on a GPU), the sequences are padded into one group, each row with its
// own keep mask; alone is the CPU's per-head schedule.
TEST_P(AllKernelsTest, PackedEqualsOneSequenceAtATime) {
  for (const auto& [causal, schedule] :
       {std::pair{false, kSchedules[0]}, std::pair{true, kSchedules[0]},
        std::pair{false, kSchedules[1]}, std::pair{true, kSchedules[1]}}) {
    at::manual_seed(7);
    const std::vector<int64_t> lengths = {37, 1, 90, 0, 20};
    std::vector<int64_t> offsets = {0};
    std::vector<at::Tensor> qs, ks, vs;
    for (size_t s = 0; s < lengths.size(); ++s) {
      const double scale = (s % 2 == 0 ? 1.0 : 10.0) * InputScale(GetParam());
      qs.push_back(at::randn({lengths[s], kHeads, kDim}) *
                   InputScale(GetParam()));
      ks.push_back(at::randn({lengths[s], kHeads, kDim}) * scale);
      vs.push_back(at::randn({lengths[s], kHeads, kValueDim}));
      offsets.push_back(offsets.back() + lengths[s]);
    }
    const AttentionOptions options = Options(GetParam(), causal);
    AttentionOptions scheduled = options;
    scheduled.cpu_schedule = schedule;
    auto packed = AttendPacked(at::cat(qs), at::cat(ks), at::cat(vs), offsets,
                               offsets, TestProjection(), scheduled);
    ASSERT_TRUE(packed.ok()) << packed.status();
    for (size_t s = 0; s < lengths.size(); ++s) {
      if (lengths[s] == 0) continue;
      const auto dense = [](const at::Tensor& t) {
        return t.permute({1, 0, 2}).unsqueeze(0);
      };
      const at::Tensor alone =
          AttendOrDie(dense(qs[s]), dense(ks[s]), dense(vs[s]), at::Tensor(),
                      options)[0]
              .permute({1, 0, 2});
      EXPECT_LT(RelativeError(packed->narrow(0, offsets[s], lengths[s]), alone),
                1e-5)
          << "sequence " << s << " causal=" << causal
          << ScheduleName(schedule);
    }
  }
}

// A projection prepared once (PreparedProjection) gives the bits of one
// prepared by the call, causal or not, on both CPU schedules; exact
// softmax prepares nothing.
TEST_P(AllKernelsTest, PreparedProjectionIsTheSameBits) {
  at::manual_seed(9);
  const std::vector<int64_t> offsets = {0, 37, 38, 128};
  const at::Tensor q = at::randn({128, kHeads, kDim}) * InputScale(GetParam());
  const at::Tensor k = at::randn({128, kHeads, kDim}) * InputScale(GetParam());
  const at::Tensor v = at::randn({128, kHeads, kValueDim});
  for (const auto& [causal, schedule] :
       {std::pair{false, kSchedules[0]}, std::pair{true, kSchedules[0]},
        std::pair{false, kSchedules[1]}}) {
    AttentionOptions options = Options(GetParam(), causal);
    options.cpu_schedule = schedule;
    auto prepared = PreparedProjection::Create(TestProjection(), kDim,
                                               c10::Device("cpu"), options);
    ASSERT_TRUE(prepared.ok()) << prepared.status();
    EXPECT_EQ(prepared->empty(), GetParam() == Kernel::kSoftmaxExact);
    auto want =
        AttendPacked(q, k, v, offsets, offsets, TestProjection(), options);
    auto got = AttendPacked(q, k, v, offsets, offsets, TestProjection(),
                            options, &*prepared);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(at::equal(*got, *want))
        << "causal=" << causal << ScheduleName(schedule);
  }
}

// A prepared projection used for another kernel, ε or head size is
// refused, and Create refuses what AttendPacked would.
TEST(AttentionTest, PreparedProjectionForOtherOptionsIsRefused) {
  const AttentionOptions favor = Options(Kernel::kFavorPositive, false);
  auto prepared = PreparedProjection::Create(TestProjection(), kDim,
                                             c10::Device("cpu"), favor);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  const std::vector<int64_t> offsets = {0, 10};
  const at::Tensor x = at::randn({10, kHeads, kDim});
  AttentionOptions other_kernel = favor;
  other_kernel.kernel = Kernel::kFavorPlusPlus;
  AttentionOptions other_epsilon = favor;
  other_epsilon.feature_epsilon = 1e-3f;
  for (const AttentionOptions& options : {other_kernel, other_epsilon}) {
    auto out = AttendPacked(x, x, x.narrow(2, 0, kValueDim), offsets, offsets,
                            TestProjection(), options, &*prepared);
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(out.status().message()),
                testing::HasSubstr("prepared projection"));
  }
  const at::Tensor wide = at::randn({10, kHeads, 2 * kDim});
  auto wrong_size = AttendPacked(wide, wide, wide, offsets, offsets,
                                 at::Tensor(), favor, &*prepared);
  EXPECT_EQ(wrong_size.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(wrong_size.status().message()),
              testing::HasSubstr("head size 16"));
  // The same projection checks as a call's.
  auto bad = PreparedProjection::Create(at::randn({kFeatures, kDim + 1}), kDim,
                                        c10::Device("cpu"), favor);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  auto none = PreparedProjection::Create(at::Tensor(), kDim,
                                         c10::Device("cpu"), favor);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
}

// A padded batch equals its unpadded sequences: padding keys (filled with
// large garbage here) are ignored by every query.
TEST_P(AllKernelsTest, PaddedBatchEqualsUnpaddedSequences) {
  for (const auto& [causal, schedule] :
       {std::pair{false, kSchedules[0]}, std::pair{true, kSchedules[0]},
        std::pair{false, kSchedules[1]}, std::pair{true, kSchedules[1]}}) {
    const Inputs in = RandomInputs(2, 80, 80, 8, InputScale(GetParam()));
    const int64_t lengths[2] = {50, 80};
    at::Tensor k = in.k.clone(), v = in.v.clone();
    at::Tensor mask = at::zeros({2, 80}, at::kBool);
    k[0].narrow(1, 50, 30).fill_(1000.0f);
    v[0].narrow(1, 50, 30).fill_(1000.0f);
    mask[0].narrow(0, 50, 30).fill_(true);
    const AttentionOptions options = Options(GetParam(), causal);
    AttentionOptions scheduled = options;
    scheduled.cpu_schedule = schedule;
    const at::Tensor padded = AttendOrDie(in.q, k, v, mask, scheduled);
    for (int b = 0; b < 2; ++b) {
      const int64_t n = lengths[b];
      const at::Tensor alone = AttendOrDie(in.q.narrow(0, b, 1).narrow(2, 0, n),
                                           in.k.narrow(0, b, 1).narrow(2, 0, n),
                                           in.v.narrow(0, b, 1).narrow(2, 0, n),
                                           at::Tensor(), options);
      EXPECT_LT(RelativeError(padded.narrow(0, b, 1).narrow(2, 0, n), alone),
                1e-5)
          << "batch " << b << " causal=" << causal << ScheduleName(schedule);
    }
  }
}

TEST_P(AllKernelsTest, NoKeyToAttendToGivesZeros) {
  const Inputs in = RandomInputs(2, 10, 10, 9);
  at::Tensor mask = at::zeros({2, 10}, at::kBool);
  mask[0].fill_(true);
  for (const AttentionOptions::CpuSchedule schedule : kSchedules) {
    AttentionOptions options = Options(GetParam(), false);
    options.cpu_schedule = schedule;
    const at::Tensor out = AttendOrDie(in.q, in.k, in.v, mask, options);
    EXPECT_TRUE(at::equal(out[0], at::zeros_like(out[0])))
        << ScheduleName(schedule);
    EXPECT_GT(out[1].abs().max().item<float>(), 0.0f) << ScheduleName(schedule);
  }
}

TEST_P(AllKernelsTest, HalfPrecisionInputsFollowFloat32) {
  const Inputs in = RandomInputs(1, 64, 64, 10, InputScale(GetParam()));
  const AttentionOptions options = Options(GetParam(), false);
  const at::Tensor reference =
      AttendOrDie(in.q, in.k, in.v, at::Tensor(), options);
  for (at::ScalarType type : {at::kBFloat16, at::kHalf}) {
    const at::Tensor out = AttendOrDie(in.q.to(type), in.k.to(type),
                                       in.v.to(type), at::Tensor(), options);
    ASSERT_EQ(out.scalar_type(), type);
    // Inputs rounded to 8 (bf16) or 11 (fp16) bits of mantissa; the output
    // follows to a few of their units in the last place.
    EXPECT_LT(RelativeError(out, reference),
              type == at::kBFloat16 ? 5e-2 : 1e-2)
        << c10::toString(type);
  }
}

// The same code on a GPU: float32 matches the CPU closely, half precisions
// within their rounding. Runs where LibTorch has CUDA and a device is
// present (scripts/gpu-bench.sh); elsewhere it says why it is skipped.
// Off the CPU the chunks are AttentionOptions' gpu_ sizes (OnDevice).
TEST(AttentionTest, OffTheCpuChunksAreTheGpuSizes) {
  AttentionOptions options;
  options.chunk_tokens = 7;
  options.causal_chunk_tokens = 5;
  options.gpu_chunk_tokens = 70;
  options.gpu_causal_chunk_tokens = 50;
  const AttentionOptions cpu = OnDevice(options, c10::Device("cpu"));
  EXPECT_EQ(cpu.chunk_tokens, 7);
  EXPECT_EQ(cpu.causal_chunk_tokens, 5);
  for (const char* device : {"cuda", "cuda:1", "meta"}) {
    const AttentionOptions off = OnDevice(options, c10::Device(device));
    EXPECT_EQ(off.chunk_tokens, 70) << device;
    EXPECT_EQ(off.causal_chunk_tokens, 50) << device;
    EXPECT_EQ(off.kernel, options.kernel) << device;
  }
}

TEST_P(AllKernelsTest, CudaMatchesCpu) {
  if (!at::hasCUDA()) {
    GTEST_SKIP() << "LibTorch has no CUDA device here; run on the GPU machine";
  }
  const Inputs in = RandomInputs(2, 300, 300, 14, InputScale(GetParam()));
  // On the GPU in chunks of 64 (several a sequence) and of the default
  // sizes (one a sequence).
  for (const auto& [causal, gpu_chunks] :
       {std::pair{false, true}, std::pair{true, true}, std::pair{false, false},
        std::pair{true, false}}) {
    AttentionOptions options = Options(GetParam(), causal);
    options.chunk_tokens = 64;
    if (gpu_chunks) {
      options.gpu_chunk_tokens = 64;
      options.gpu_causal_chunk_tokens = options.causal_chunk_tokens;
    }
    const at::Tensor reference =
        AttendOrDie(in.q, in.k, in.v, at::Tensor(), options);
    for (at::ScalarType type : {at::kFloat, at::kBFloat16, at::kHalf}) {
      const auto cuda = [&](const at::Tensor& t) {
        return t.to(at::kCUDA, type);
      };
      auto out = Attend(cuda(in.q), cuda(in.k), cuda(in.v), TestProjection(),
                        at::Tensor(), options);
      ASSERT_TRUE(out.ok()) << out.status();
      const double bound = type == at::kFloat  ? 1e-4
                           : type == at::kHalf ? 1e-2
                                               : 5e-2;
      EXPECT_LT(RelativeError(out->cpu(), reference), bound)
          << c10::toString(type) << " causal=" << causal
          << " small gpu chunks=" << gpu_chunks;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllKernels, AllKernelsTest,
                         testing::Values(Kernel::kSoftmaxExact,
                                         Kernel::kFavorPositive,
                                         Kernel::kFavorPlusPlus,
                                         Kernel::kFavorHyperbolic,
                                         Kernel::kTrigonometric, Kernel::kRelu,
                                         Kernel::kEluPlusOne, Kernel::kExp),
                         KernelTestName);

// bfloat16 inputs on FAVOR+'s and FAVOR++'s fused CPU path (cpu::GemmBF16):
// each sequence keeps its own float32 key sums, split into ranges by its
// own length only, so a sequence packed with neighbours whose keys are ten
// times larger gives, bit for bit, what it gives alone (the 200-token one
// spans several ranges of 16-token chunks). And the fused path follows
// LibTorch's bfloat16 path (the reference, taken with GemmBF16 turned off)
// to 5e-2, the bound HalfPrecisionInputsFollowFloat32 allows bfloat16.
TEST(AttentionTest, BFloat16PackedEqualsOneSequenceAtATime) {
  if (!cpu::GemmBF16IsFast()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  for (const Kernel kernel : {Kernel::kFavorPositive, Kernel::kFavorPlusPlus}) {
    at::manual_seed(7);
    const std::vector<int64_t> lengths = {37, 1, 200, 20};
    std::vector<int64_t> offsets = {0};
    std::vector<at::Tensor> qs, ks, vs;
    for (size_t s = 0; s < lengths.size(); ++s) {
      const auto bf16 = [&](int64_t dim, double scale) {
        return (at::randn({lengths[s], kHeads, dim}) * scale).to(at::kBFloat16);
      };
      qs.push_back(bf16(kDim, 1.0));
      ks.push_back(bf16(kDim, s % 2 == 0 ? 1.0 : 10.0));
      vs.push_back(bf16(kValueDim, 1.0));
      offsets.push_back(offsets.back() + lengths[s]);
    }
    const AttentionOptions options = Options(kernel, false);
    auto packed = AttendPacked(at::cat(qs), at::cat(ks), at::cat(vs), offsets,
                               offsets, TestProjection(), options);
    ASSERT_TRUE(packed.ok()) << packed.status();
    ASSERT_EQ(packed->scalar_type(), at::kBFloat16);
    for (size_t s = 0; s < lengths.size(); ++s) {
      const auto dense = [](const at::Tensor& t) {
        return t.permute({1, 0, 2}).unsqueeze(0);
      };
      const auto alone = [&] {
        return AttendOrDie(dense(qs[s]), dense(ks[s]), dense(vs[s]),
                           at::Tensor(), options)[0]
            .permute({1, 0, 2});
      };
      const at::Tensor fused = alone();
      EXPECT_TRUE(at::equal(packed->narrow(0, offsets[s], lengths[s]), fused))
          << KernelName(kernel) << " sequence " << s << ": "
          << RelativeError(packed->narrow(0, offsets[s], lengths[s]), fused);
      cpu::SetFastGemmBF16Enabled(false);
      EXPECT_LT(RelativeError(fused, alone()), 5e-2) << KernelName(kernel);
      cpu::SetFastGemmBF16Enabled(true);
    }
  }
}

// Large-norm inputs: the stabilisers keep FAVOR+ and FAVOR++ finite (for
// FAVOR++, A* is then far below 0 and B = √(1 − 4A) large).
TEST(AttentionTest, LargeNormInputsStayFinite) {
  Inputs in = RandomInputs(1, 64, 64, 12);
  for (Kernel kernel : {Kernel::kFavorPositive, Kernel::kFavorPlusPlus}) {
    for (bool causal : {false, true}) {
      const at::Tensor out = AttendOrDie(in.q * 300, in.k * 300, in.v,
                                         at::Tensor(), Options(kernel, causal));
      EXPECT_TRUE(at::isfinite(out).all().item<bool>())
          << KernelName(kernel) << " causal=" << causal;
    }
  }
}

// Each error names what is wrong.
TEST(AttentionTest, ErrorsNameTheProblem) {
  const Inputs in = RandomInputs(1, 8, 8, 13);
  const AttentionOptions options = Options(Kernel::kFavorPositive, false);
  const at::Tensor w = TestProjection();
  const auto message = [&](const absl::StatusOr<at::Tensor>& result) {
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(result.status().message());
  };
  using testing::HasSubstr;
  EXPECT_THAT(message(Attend(in.q, in.k.narrow(3, 0, 8), in.v, w, {}, options)),
              HasSubstr("disagree"));
  EXPECT_THAT(message(Attend(in.q[0], in.k, in.v, w, {}, options)),
              HasSubstr("query must have shape"));
  EXPECT_THAT(message(Attend(in.q.to(at::kDouble), in.k, in.v, w, {}, options)),
              HasSubstr("Double"));
  EXPECT_THAT(message(Attend(in.q, in.k.to(at::kHalf), in.v, w, {}, options)),
              HasSubstr("share a dtype"));
  EXPECT_THAT(message(Attend(in.q, in.k, in.v, at::Tensor(), {}, options)),
              HasSubstr("needs a projection"));
  EXPECT_THAT(
      message(Attend(in.q, in.k, in.v, at::randn({0, kDim}), {}, options)),
      HasSubstr("m >= 1"));
  EXPECT_THAT(
      message(Attend(in.q, in.k, in.v, at::randn({8, kDim + 1}), {}, options)),
      HasSubstr("d = 16"));
  EXPECT_THAT(message(Attend(in.q, in.k, in.v, w, at::zeros({1, 7}, at::kBool),
                             options)),
              HasSubstr("key_padding_mask"));
  EXPECT_THAT(
      message(Attend(in.q, in.k.to(at::Device("meta")), in.v, w, {}, options)),
      HasSubstr("one device"));
  AttentionOptions causal = options;
  causal.causal = true;
  EXPECT_THAT(message(Attend(in.q, in.k.narrow(2, 0, 4), in.v.narrow(2, 0, 4),
                             w, {}, causal)),
              HasSubstr("as many queries as keys"));
  // Checked on every device, not only where they apply.
  for (int64_t AttentionOptions::*size :
       {&AttentionOptions::gpu_chunk_tokens,
        &AttentionOptions::gpu_causal_chunk_tokens}) {
    AttentionOptions zero = options;
    zero.*size = 0;
    EXPECT_THAT(message(Attend(in.q, in.k, in.v, w, {}, zero)),
                HasSubstr("chunk and tile sizes"));
  }
  const at::Tensor packed = at::randn({8, kHeads, kDim});
  const std::vector<int64_t> good = {0, 3, 8}, bad = {0, 5, 3, 8};
  EXPECT_THAT(
      message(AttendPacked(packed, packed, packed, bad, bad, w, options)),
      HasSubstr("must not decrease"));
  const std::vector<int64_t> short_offsets = {0, 3, 7};
  EXPECT_THAT(message(AttendPacked(packed, packed, packed, short_offsets,
                                   short_offsets, w, options)),
              HasSubstr("end at the token count 8"));
  EXPECT_TRUE(
      AttendPacked(packed, packed, packed, good, good, w, options).ok());
}

}  // namespace
}  // namespace favor::attention
