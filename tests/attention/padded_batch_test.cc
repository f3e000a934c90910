// The batched schedule (padded_batch.h), as every device but the CPU runs
// packed attention: sequences of very different lengths split into buckets
// and still equal the per-head schedule; and a batch of 64 short sequences
// issues at most twice the ATen calls of a batch of one (aten_calls.h),
// FAVOR+'s and FAVOR++'s chains; softmax, whose chain is one LibTorch call
// on 2.x, at most one bucket's gathering more.
#include "server/attention/padded_batch.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <iostream>
#include <vector>

#include "server/attention/attention.h"
#include "server/attention/projection.h"
#include "tests/attention/aten_calls.h"

namespace favor::attention {
namespace {

constexpr int64_t kHeads = 4, kDim = 16, kValueDim = 16, kFeatures = 32;

at::Tensor Projection() {
  ProjectionOptions options;
  options.num_features = kFeatures;
  options.head_dim = kDim;
  options.seed = 5;
  return *DrawProjection(options);
}

struct Packed {
  at::Tensor q, k, v;
  std::vector<int64_t> offsets = {0};
};

Packed RandomPacked(const std::vector<int64_t>& lengths, uint64_t seed) {
  at::manual_seed(seed);
  Packed p;
  for (int64_t length : lengths) p.offsets.push_back(p.offsets.back() + length);
  const int64_t tokens = p.offsets.back();
  p.q = at::randn({tokens, kHeads, kDim});
  p.k = at::randn({tokens, kHeads, kDim});
  p.v = at::randn({tokens, kHeads, kValueDim});
  return p;
}

at::Tensor AttendOrDie(const Packed& p, Kernel kernel, bool causal,
                       AttentionOptions::CpuSchedule schedule) {
  AttentionOptions options;
  options.kernel = kernel;
  options.causal = causal;
  options.cpu_schedule = schedule;
  auto out =
      AttendPacked(p.q, p.k, p.v, p.offsets, p.offsets, Projection(), options);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : at::Tensor();
}

// 2 + 30 + 40 tokens fit one small bucket; 8,500 and 9,000 another (padded
// 18,000 for 17,500 tokens); 9,000 would not join the first. So two padded
// groups, each row with its own mask, and the 1-token sequence in one.
TEST(PaddedBatchTest, LongAndShortSequencesEqualThePerHeadSchedule) {
  const Packed p = RandomPacked({9000, 30, 2, 40, 8500, 1}, 3);
  for (Kernel kernel :
       {Kernel::kFavorPositive, Kernel::kFavorPlusPlus, Kernel::kSoftmaxExact}) {
    for (bool causal : {false, true}) {
      const at::Tensor per_head = AttendOrDie(
          p, kernel, causal, AttentionOptions::CpuSchedule::kPerHead);
      const at::Tensor batched = AttendOrDie(
          p, kernel, causal, AttentionOptions::CpuSchedule::kBatched);
      const double error =
          ((batched - per_head).abs().max() / per_head.abs().max())
              .item<double>();
      EXPECT_LT(error, 1e-5) << KernelName(kernel) << " causal=" << causal;
    }
  }
}

// 40 sequences of 2,000 tokens: 80,000 tokens, more than one bucket may
// hold (kMaxBucketTokens, a bound on a chunk's features), so two buckets,
// each within the bound, and still the per-head schedule's attention.
TEST(PaddedBatchTest, ABucketHoldsAtMostItsTokenCap) {
  const Packed p = RandomPacked(std::vector<int64_t>(40, 2000), 4);
  const at::Tensor out = at::empty({p.q.size(0), kHeads, kValueDim});
  const PaddedBatch batch(p.q, p.k, p.v, p.offsets, p.offsets, out);
  ASSERT_EQ(batch.groups().size(), 2u);
  for (const HeadGroup& group : batch.groups()) {
    EXPECT_LE(group.query.size(0) / kHeads * group.query.size(1),
              PaddedBatch::kMaxBucketTokens);
  }
  const at::Tensor per_head =
      AttendOrDie(p, Kernel::kFavorPositive, false,
                  AttentionOptions::CpuSchedule::kPerHead);
  const at::Tensor batched =
      AttendOrDie(p, Kernel::kFavorPositive, false,
                  AttentionOptions::CpuSchedule::kBatched);
  EXPECT_LT(((batched - per_head).abs().max() / per_head.abs().max())
                .item<double>(),
            1e-5);
}

using attention_testing::CountAtenCalls;

// The calls that gathering a padded bucket and scattering its output back
// cost (index copies to the device, three gathers with their reshapes, the
// output and its scatter), with room to spare: about 20 are issued.
constexpr int64_t kBucketCalls = 32;

std::vector<int64_t> RandomLengths(int n, int64_t low, int64_t high) {
  at::manual_seed(17);
  const at::Tensor lengths = at::randint(low, high + 1, {n}, at::kLong);
  return std::vector<int64_t>(lengths.data_ptr<int64_t>(),
                              lengths.data_ptr<int64_t>() + n);
}

// One launch chain per chunk for a whole batch, not per sequence. Without
// the padding (every sequence its own group) the batch of 64 would issue
// about 64 times the calls of one.
TEST(PaddedBatchTest, SixtyFourSequencesCostAtMostTwiceTheCallsOfOne) {
  for (Kernel kernel :
       {Kernel::kFavorPositive, Kernel::kFavorPlusPlus, Kernel::kSoftmaxExact}) {
    for (bool causal : {false, true}) {
      const Packed one = RandomPacked({64}, 1);
      const Packed many = RandomPacked(RandomLengths(64, 16, 128), 2);
      const auto count = [&](const Packed& p) {
        return CountAtenCalls([&] {
          AttendOrDie(p, kernel, causal,
                      AttentionOptions::CpuSchedule::kBatched);
        });
      };
      const int64_t calls_one = count(one), calls_many = count(many);
      std::cout << KernelName(kernel) << (causal ? " causal" : "")
                << ": ATen calls for 1 sequence " << calls_one
                << ", for 64 sequences of 16-128 tokens " << calls_many << "\n";
      EXPECT_GT(calls_one, 0);
      if (kernel == Kernel::kSoftmaxExact) {
        // Where LibTorch has its own attention (2.x), one sequence's softmax
        // is a single call per group, shorter than a bucket's gathering
        // and scattering: the bound is then that cost, once per bucket.
        EXPECT_LE(calls_many, calls_one + kBucketCalls)
            << KernelName(kernel) << " causal=" << causal;
      } else {
        EXPECT_LE(calls_many, 2 * calls_one)
            << KernelName(kernel) << " causal=" << causal;
      }
    }
  }
}

}  // namespace
}  // namespace favor::attention
