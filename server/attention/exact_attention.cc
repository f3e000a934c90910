#include "server/attention/exact_attention.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>

#include "server/attention/cpu_kernels.h"
#include "server/attention/exact_cpu_path.h"
#include "server/attention/keep_mask.h"
#include "server/attention/torch_compat.h"

namespace favor::attention {
namespace {

// Running state of the online softmax for one query tile.
struct TileState {
  at::Tensor row_max;  // (G, tq, 1)
  at::Tensor row_sum;  // (G, tq, 1)
  at::Tensor acc;      // (G, tq, dv)
};

// exp in place, with Favor's vectorised exp on CPU (LibTorch's CPU exp is
// the scalar libm one in Debian's build).
void ExpInPlace(at::Tensor& x) {
  if (x.device().is_cpu() && x.is_contiguous() &&
      x.scalar_type() == at::kFloat) {
    cpu::Exp(x.data_ptr<float>(), x.data_ptr<float>(), x.numel());
  } else {
    x.exp_();
  }
}

// Scores of one (query tile, key tile) pair with padding, causal and
// sliding-window masks.
at::Tensor MaskedScores(const HeadGroup& group, const at::Tensor& q,
                        int64_t q_begin, int64_t k_begin, int64_t k_end,
                        const AttentionOptions& options, double scale) {
  const bool causal = options.causal;
  const int64_t radius = options.window_radius;
  const at::Tensor k =
      group.key.narrow(1, k_begin, k_end - k_begin).to(at::kFloat);
  at::Tensor scores = at::bmm(q, k.transpose(1, 2)).mul_(scale);
  const float minus_inf = -std::numeric_limits<float>::infinity();
  if (group.keep.defined()) {
    scores.masked_fill_(
        DroppedColumns(KeepColumns(group.keep, k_begin, k_end)), minus_inf);
  }
  const int64_t q_end = q_begin + q.size(1);
  const bool beyond_window =
      radius >= 0 && (k_end - 1 > q_begin + radius || k_begin < q_end - 1 - radius);
  if ((causal && k_end - 1 > q_begin) || beyond_window) {
    const auto opts = at::TensorOptions().dtype(at::kLong).device(q.device());
    const at::Tensor rows = at::arange(q_begin, q_end, opts).view({1, -1, 1});
    const at::Tensor cols = at::arange(k_begin, k_end, opts).view({1, 1, -1});
    at::Tensor dropped = causal ? cols > rows : at::zeros_like(cols > rows);
    if (radius >= 0) dropped.logical_or_((cols - rows).abs_() > radius);
    scores.masked_fill_(dropped, minus_inf);
  }
  return scores;
}

void QueryTile(const HeadGroup& group, const AttentionOptions& options,
               int64_t q_begin, int64_t q_end) {
  if (ExactCpuPathApplies(group)) {
    return ExactQueryTileCpu(group, options, q_begin, q_end);
  }
  const at::Tensor q =
      group.query.narrow(1, q_begin, q_end - q_begin).to(at::kFloat);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(2)));
  const int64_t key_length = group.key.size(1);
  int64_t key_stop = options.causal ? std::min(key_length, q_end) : key_length;
  int64_t key_start = 0;
  if (options.window_radius >= 0) {  // only the keys some query here sees
    key_start = std::max<int64_t>(0, q_begin - options.window_radius);
    key_stop = std::min(key_stop, q_end + options.window_radius);
  }
  const auto opts = q.options();
  // The running maximum starts at −∞: any finite start would be above
  // logits lower still (all below −1e30 turned a row into zeros).
  const float minus_inf = -std::numeric_limits<float>::infinity();
  TileState state{at::full({q.size(0), q.size(1), 1}, minus_inf, opts),
                  at::zeros({q.size(0), q.size(1), 1}, opts),
                  at::zeros({q.size(0), q.size(1), group.value.size(2)}, opts)};
  for (int64_t k_begin = key_start; k_begin < key_stop;
       k_begin += options.exact_key_tile) {
    const int64_t k_end = std::min(key_stop, k_begin + options.exact_key_tile);
    at::Tensor scores =
        MaskedScores(group, q, q_begin, k_begin, k_end, options, scale);
    const at::Tensor new_max =
        at::maximum(state.row_max, scores.amax({2}, /*keepdim=*/true));
    // A row with no key yet (maximum −∞, every score masked) shifts by 0:
    // its scores stay −∞ and give 0, where −∞ − (−∞) would give NaN. A
    // row's state is 0 until its first key, so its correction can be 0.
    const at::Tensor shift =
        at::where(new_max == minus_inf, at::zeros({}, opts), new_max);
    at::Tensor correction = state.row_max - shift;
    ExpInPlace(correction);
    scores.sub_(shift);
    ExpInPlace(scores);
    state.row_sum.mul_(correction).add_(scores.sum(2, /*keepdim=*/true));
    state.acc.mul_(correction)
        .baddbmm_(
            scores,
            group.value.narrow(1, k_begin, k_end - k_begin).to(at::kFloat));
    state.row_max = new_max;
  }
  const at::Tensor out = at::where(state.row_sum == 0, at::zeros({}, opts),
                                   state.acc / state.row_sum);
  group.out.narrow(1, q_begin, q_end - q_begin).copy_(out);
}

// Whether LibTorch's own attention takes `group` (exact_attention.h).
bool LibTorchTakes(const HeadGroup& group, const AttentionOptions& options) {
  if (!torch_compat::kHasScaledDotProductAttention ||
      !options.softmax_on_libtorch || options.window_radius >= 0) {
    return false;
  }
  return !group.keep.defined() ||
         group.query.size(0) * group.query.size(1) * group.key.size(1) <=
             kMaxMaskedScores;
}

// The group's attention by at::scaled_dot_product_attention, on 4-D views
// (1, G, L, ·) as its fused kernels require. A query that sees no key gets
// zeros, as from the tiled kernel (LibTorch's softmax over nothing is NaN).
void LibTorchAttention(const HeadGroup& group, bool causal) {
  const int64_t g = group.query.size(0), lq = group.query.size(1);
  const int64_t lk = group.key.size(1);
  at::Tensor keep;  // (1 or G, 1 or Lq, Lk)
  if (group.keep.defined()) {
    keep = group.keep.view({group.keep.dim() == 2 ? g : 1, 1, lk});
    if (causal) {
      keep = keep.logical_and(
          at::ones({lq, lk}, keep.options()).tril().unsqueeze(0));
    }
  }
  at::Tensor out = *torch_compat::ScaledDotProductAttention(
      group.query.unsqueeze(0), group.key.unsqueeze(0),
      group.value.unsqueeze(0),
      keep.defined() ? keep.unsqueeze(0) : at::Tensor(),
      causal && !keep.defined());
  out = out.squeeze(0);
  if (keep.defined()) {
    out.masked_fill_(keep.any(-1).logical_not().unsqueeze(-1), 0);
  }
  group.out.copy_(out);
}

}  // namespace

void RunExactAttention(const AttentionOptions& options,
                       const std::vector<HeadGroup>& groups, bool parallel) {
  if (groups.empty()) return;
  std::vector<HeadGroup> tiled;
  std::vector<const HeadGroup*> on_libtorch;
  for (const HeadGroup& group : groups) {
    if (LibTorchTakes(group, options)) {
      on_libtorch.push_back(&group);
    } else {
      tiled.push_back(group);
    }
  }
  ForEachTask(static_cast<int64_t>(on_libtorch.size()), parallel,
              [&](int64_t i) {
                LibTorchAttention(*on_libtorch[i], options.causal);
              });
  if (tiled.empty()) return;
  const std::vector<TokenRange> tiles = SplitIntoRanges(
      tiled.size(), [&](size_t g) { return tiled[g].query.size(1); },
      options.exact_query_tile, std::numeric_limits<int64_t>::max() / 2);
  ForEachTask(static_cast<int64_t>(tiles.size()), parallel, [&](int64_t i) {
    QueryTile(tiled[tiles[i].group], options, tiles[i].begin, tiles[i].end);
  });
}

}  // namespace favor::attention
