#include "server/attention/favor_plus_plus.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "server/attention/cpu_kernels.h"
#include "server/attention/keep_mask.h"

namespace favor::attention {
namespace {

// A* from ρ (favor_plus_plus.h), for a double or a tensor of them.
template <typename T>
T OptimalAOf(const T& rho) {
  using std::sqrt;
  return (1.0 - 2.0 * rho -
          sqrt((2.0 * rho + 1.0) * (2.0 * rho + 1.0) + 8.0 * rho)) /
         16.0;
}

// ‖x'‖² = ‖x‖²/√d and x̄'ᵀȳ' = x̄ᵀȳ/√d: the statistic's d^-1/4 scaling.
double PrimeScale(int64_t head_dim) {
  return 1.0 / std::sqrt(static_cast<double>(head_dim));
}

// The moments of one head's rows on the CPU, in a raw loop.
struct HostMoments {
  std::vector<double> sums;
  double sum_squared_norms = 0;
  int64_t count = 0;
};

HostMoments HostMomentsOf(const at::Tensor& x, const at::Tensor& keep) {
  const int64_t d = x.size(2);
  HostMoments moments;
  moments.sums.assign(d, 0.0);
  const uint8_t* keep_rows =
      keep.defined() ? reinterpret_cast<const uint8_t*>(keep.data_ptr<bool>())
                     : nullptr;
  cpu::AddKeptMoments(x.data_ptr<float>(), x.size(1), d, x.stride(1), keep_rows,
                      moments.sums.data(), &moments.sum_squared_norms,
                      &moments.count);
  return moments;
}

double HostOptimalA(const HostMoments& q, const HostMoments& k) {
  if (q.count == 0 || k.count == 0) return 0.0;
  const int64_t d = static_cast<int64_t>(q.sums.size());
  double mean_dot = 0;
  for (int64_t c = 0; c < d; ++c) mean_dot += q.sums[c] * k.sums[c];
  mean_dot /= static_cast<double>(q.count) * static_cast<double>(k.count);
  const double rho =
      (q.sum_squared_norms / static_cast<double>(q.count) +
       k.sum_squared_norms / static_cast<double>(k.count) + 2.0 * mean_dot) *
      PrimeScale(d) / static_cast<double>(d);
  return OptimalAOf(rho);
}

// Whether the raw loop can read x: one head of float32 CPU rows.
bool HostReadable(const at::Tensor& x) {
  return x.device().is_cpu() && x.scalar_type() == at::kFloat &&
         x.size(0) == 1 && x.stride(2) == 1;
}

// The query rows the statistic counts (see SetFavorPlusPlusLogits).
at::Tensor QueryKeep(const HeadGroup& group) {
  return group.query.size(1) == group.key.size(1) ? group.keep : at::Tensor();
}

LogitMap GroupLogits(const FeatureContext& context, int64_t chunk_tokens,
                     const HeadGroup& group) {
  const at::Tensor query_keep = QueryKeep(group);
  if (HostReadable(group.query) && HostReadable(group.key)) {
    const double a = HostOptimalA(HostMomentsOf(group.query, query_keep),
                                  HostMomentsOf(group.key, group.keep));
    return context.FavorPlusPlusLogits(
        at::full({1, 1, 1}, a, group.key.options().dtype(at::kDouble)));
  }
  const at::Tensor a = OptimalA(
      MomentsOf(group.query, query_keep, chunk_tokens),
      MomentsOf(group.key, group.keep, chunk_tokens), group.key.size(2));
  return context.FavorPlusPlusLogits(a.view({-1, 1, 1}));
}

}  // namespace

RowMoments MomentsOf(const at::Tensor& x, const at::Tensor& keep,
                     int64_t chunk_tokens) {
  const auto opts = x.options().dtype(at::kDouble);
  RowMoments moments{at::zeros({x.size(0)}, opts),
                     at::zeros({x.size(0), x.size(2)}, opts),
                     keep.defined() ? keep.sum(-1).to(at::kDouble)
                                    : at::full({}, double(x.size(1)), opts)};
  for (int64_t start = 0; start < x.size(1); start += chunk_tokens) {
    const int64_t rows = std::min(chunk_tokens, x.size(1) - start);
    at::Tensor chunk = x.narrow(1, start, rows).to(at::kFloat);
    if (keep.defined()) {
      chunk = chunk.masked_fill(
          DroppedRows(KeepColumns(keep, start, start + rows)), 0.0f);
    }
    moments.sum_squared_norms.add_(chunk.square().sum({1, 2}));
    moments.sums.add_(chunk.sum(1));
  }
  return moments;
}

at::Tensor OptimalA(const RowMoments& queries, const RowMoments& keys,
                    int64_t head_dim) {
  // Empty sides give count 0: clamp it so the means are 0, not NaN, and
  // zero A there explicitly.
  const at::Tensor q_count = queries.count.clamp_min(1.0);
  const at::Tensor k_count = keys.count.clamp_min(1.0);
  const at::Tensor mean_dot =
      (queries.sums * keys.sums).sum(-1) / (q_count * k_count);
  const at::Tensor rho = (queries.sum_squared_norms / q_count +
                          keys.sum_squared_norms / k_count + 2.0 * mean_dot) *
                         (PrimeScale(head_dim) / static_cast<double>(head_dim));
  const at::Tensor empty = at::logical_or(queries.count == 0, keys.count == 0);
  return OptimalAOf(rho).masked_fill(empty, 0.0);
}

void SetFavorPlusPlusLogits(const FeatureContext& context, int64_t chunk_tokens,
                            std::vector<HeadGroup>& groups, bool parallel) {
  ForEachTask(static_cast<int64_t>(groups.size()), parallel, [&](int64_t i) {
    groups[i].logits = GroupLogits(context, chunk_tokens, groups[i]);
  });
}

}  // namespace favor::attention
