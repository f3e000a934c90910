#include "server/attention/linear_attention.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "server/attention/favor_cpu_path.h"
#include "server/attention/favor_plus_plus.h"
#include "server/attention/key_state.h"

namespace favor::attention {
namespace {

// Everything a pass needs, fixed for one call.
class LinearAttention {
 public:
  LinearAttention(const FeatureContext& context,
                  const AttentionOptions& options)
      : context_(context), options_(options) {}

  KeyState EmptyState(const HeadGroup& group) const;
  KeyState AccumulateKeys(const HeadGroup& group, int64_t begin,
                          int64_t end) const;
  // Folds `part` into `total` (both shifted to the larger shift).
  void Merge(KeyState& total, const KeyState& part) const;
  // The state queries multiply: [Σφ(k)vᵀ | Σφ(k)] with ε folded in, or for
  // kExp the per-feature normalised sums with a ones column.
  // The state the queries multiply; in `keys`' own sums when nothing else
  // holds them.
  at::Tensor QueryState(KeyState keys) const;
  void Queries(const HeadGroup& group, const at::Tensor& state, int64_t begin,
               int64_t end) const;
  // Causal outputs for tokens [begin, end), given `prefix`, the key sums of
  // the tokens before `begin` (shifted by their own maximum).
  void CausalRange(const HeadGroup& group, KeyState prefix, int64_t begin,
                   int64_t end) const;

 private:
  // What a causal chunk's steps share: its queries' features and its keys'
  // projections, halved squared norms and keep mask.
  struct CausalInputs {
    at::Tensor query_features;  // (G, c, F), with ε
    at::Tensor u;               // (G, c, m)
    at::Tensor half_norm;       // (G, c, 1)
    at::Tensor keep;            // keep's columns; undefined: all kept
    at::Tensor values;          // (G, c, dv + 1), padding rows 0
  };
  CausalInputs CausalChunkInputs(const HeadGroup& group, int64_t begin,
                                 int64_t end) const;
  // The chunk's key features at `shift`, padding rows 0.
  at::Tensor CausalKeyFeatures(const CausalInputs& in,
                               const at::Tensor& shift) const;
  at::Tensor CausalShifts(const KeyState& prefix, const CausalInputs& in) const;
  void CausalChunk(const HeadGroup& group, KeyState& prefix, int64_t begin,
                   int64_t end) const;
  void CausalChunkExp(const HeadGroup& group, KeyState& prefix, int64_t begin,
                      int64_t end) const;
  at::Tensor ValuesWithOnes(const HeadGroup& group, int64_t begin,
                            int64_t end) const;
  at::Tensor KeepSlice(const HeadGroup& group, int64_t begin,
                       int64_t end) const;

  const FeatureContext& context_;
  const AttentionOptions& options_;
};

// num / den over the last column of `with_denominator` (..., dv + 1); 0
// where the denominator is 0 (no key to attend to).
at::Tensor DivideByLastColumn(const at::Tensor& with_denominator) {
  const int64_t dv = with_denominator.size(-1) - 1;
  const at::Tensor num = with_denominator.narrow(-1, 0, dv);
  const at::Tensor den = with_denominator.narrow(-1, dv, 1);
  return at::where(den == 0, at::zeros({}, num.options()), num / den);
}

void Rescale(KeyState& state, const at::Tensor& new_shift) {
  if (!state.shift.defined()) return;
  state.sums.mul_(at::exp(state.shift - new_shift).transpose(1, 2));
  state.shift = new_shift;
}

KeyState LinearAttention::EmptyState(const HeadGroup& group) const {
  const int64_t g = group.key.size(0);
  const int64_t f = context_.num_features();
  const int64_t dv = group.value.size(2);
  const auto opts = group.key.options().dtype(at::kFloat);
  KeyState state{at::zeros({g, f, dv + 1}, opts), at::Tensor(),
                 at::zeros({g, 1, dv + 1}, opts)};
  switch (context_.traits().key_shift) {
    case KeyShift::kScalar:
      state.shift = at::full({g, 1, 1}, FeatureContext::kEmptyShift, opts);
      break;
    case KeyShift::kPerFeature:
      state.shift = at::full({g, 1, f}, FeatureContext::kEmptyShift, opts);
      break;
    case KeyShift::kNone:
      break;
  }
  return state;
}

at::Tensor LinearAttention::KeepSlice(const HeadGroup& group, int64_t begin,
                                      int64_t end) const {
  if (!group.keep.defined()) return at::Tensor();
  return KeepColumns(group.keep, begin, end);
}

at::Tensor LinearAttention::ValuesWithOnes(const HeadGroup& group,
                                           int64_t begin, int64_t end) const {
  const at::Tensor v = group.value.narrow(1, begin, end - begin).to(at::kFloat);
  at::Tensor ones = at::ones({v.size(0), v.size(1), 1}, v.options());
  at::Tensor with_ones = at::cat({v, ones}, -1);
  const at::Tensor keep = KeepSlice(group, begin, end);
  if (!keep.defined()) return with_ones;
  return with_ones.masked_fill(DroppedRows(keep), 0.0f);
}

KeyState LinearAttention::AccumulateKeys(const HeadGroup& group, int64_t begin,
                                         int64_t end) const {
  if (FavorCpuPathApplies(context_, group)) {
    return AccumulateKeysFavorCpu(context_, options_, group, begin, end);
  }
  KeyState state = EmptyState(group);
  for (int64_t start = begin; start < end; start += options_.chunk_tokens) {
    const int64_t stop = std::min(end, start + options_.chunk_tokens);
    const at::Tensor x = group.key.narrow(1, start, stop - start);
    const at::Tensor keep = KeepSlice(group, start, stop);
    const at::Tensor u = context_.Project(x, group.logits);
    const at::Tensor half = context_.HalfSquaredNorm(x);
    if (state.shift.defined()) {
      Rescale(state,
              at::maximum(state.shift, context_.KeyShift(u, half, keep)));
    }
    at::Tensor features = context_.KeyFeatures(u, half, state.shift);
    if (keep.defined()) {
      features.masked_fill_(DroppedRows(keep), 0.0f);
    }
    const at::Tensor values = ValuesWithOnes(group, start, stop);
    state.sums.baddbmm_(features.transpose(1, 2), values);
    state.value_sums.add_(values.sum(1, /*keepdim=*/true));
  }
  return state;
}

void LinearAttention::Merge(KeyState& total, const KeyState& part) const {
  KeyState scaled = part;
  if (total.shift.defined()) {
    const at::Tensor shift = at::maximum(total.shift, part.shift);
    Rescale(total, shift);
    scaled.sums = part.sums.clone();
    Rescale(scaled, shift);
  }
  total.sums.add_(scaled.sums);
  total.value_sums.add_(part.value_sums);
}

at::Tensor LinearAttention::QueryState(KeyState keys) const {
  if (context_.traits().key_shift == KeyShift::kPerFeature) {
    const at::Tensor normalised = DivideByLastColumn(keys.sums);
    return at::cat({normalised, at::ones_like(keys.sums.narrow(-1, 0, 1))}, -1);
  }
  if (context_.epsilon() == 0.0f) return keys.sums;
  const at::Tensor& sums = keys.sums;              // (G, F, dv + 1)
  const at::Tensor& value_sums = keys.value_sums;  // (G, 1, dv + 1)
  if (!sums.is_cpu() || sums.scalar_type() != at::kFloat ||
      !sums.is_contiguous() || !value_sums.is_cpu() ||
      value_sums.scalar_type() != at::kFloat || !value_sums.is_contiguous()) {
    return sums + context_.epsilon() * value_sums;
  }
  // The same sum as a loop, in place where the sums are this state's
  // alone: on the CPU path a group is one head of one sequence, and two
  // broadcast tensor operations per head cost a batch of short sequences
  // more than the arithmetic.
  const bool own = sums.use_count() == 1 && sums.storage().use_count() == 1;
  at::Tensor state = own ? sums : at::empty_like(sums);
  const int64_t groups = sums.size(0), rows = sums.size(1);
  const int64_t cols = sums.size(2);
  const float epsilon = context_.epsilon();
  const float* in = sums.data_ptr<float>();
  const float* add = value_sums.data_ptr<float>();
  float* out = state.data_ptr<float>();
  for (int64_t g = 0; g < groups; ++g, add += cols) {
    for (int64_t i = 0; i < rows; ++i, in += cols, out += cols) {
      if (own) {  // one pointer: no run-time check of in against out
        for (int64_t j = 0; j < cols; ++j) out[j] += epsilon * add[j];
      } else {
        for (int64_t j = 0; j < cols; ++j) out[j] = in[j] + epsilon * add[j];
      }
    }
  }
  return state;
}

void LinearAttention::Queries(const HeadGroup& group, const at::Tensor& state,
                              int64_t begin, int64_t end) const {
  if (FavorCpuPathApplies(context_, group)) {
    return QueriesFavorCpu(context_, options_, group, state, begin, end);
  }
  for (int64_t start = begin; start < end; start += options_.chunk_tokens) {
    const int64_t stop = std::min(end, start + options_.chunk_tokens);
    const at::Tensor x = group.query.narrow(1, start, stop - start);
    const at::Tensor features = context_.QueryFeatures(
        context_.Project(x, group.logits), context_.HalfSquaredNorm(x));
    group.out.narrow(1, start, stop - start)
        .copy_(DivideByLastColumn(at::bmm(features, state)));
  }
}

void LinearAttention::CausalRange(const HeadGroup& group, KeyState prefix,
                                  int64_t begin, int64_t end) const {
  for (int64_t start = begin; start < end;
       start += options_.causal_chunk_tokens) {
    const int64_t stop = std::min(end, start + options_.causal_chunk_tokens);
    if (context_.traits().key_shift == KeyShift::kPerFeature) {
      CausalChunkExp(group, prefix, start, stop);
    } else {
      CausalChunk(group, prefix, start, stop);
    }
  }
}

// The key shift each query of a causal chunk sees: (G, c, 1), c_i the
// running maximum of the key shifts (KeyRowShifts) of the prefix and of the
// chunk's keys up to i, never a later key's: with ε > 0 the shift is part
// of the result, and a maximum over later keys would make a prefix's
// outputs depend on them. Without ε it cancels exactly, and one shift
// serves the chunk, (G, 1, 1): the maximum up to the chunk's end.
// Undefined for kernels without a shift.
at::Tensor LinearAttention::CausalShifts(const KeyState& prefix,
                                         const CausalInputs& in) const {
  if (!prefix.shift.defined()) return at::Tensor();
  if (context_.epsilon() == 0.0f) {
    return at::maximum(prefix.shift,
                       context_.KeyShift(in.u, in.half_norm, in.keep));
  }
  const at::Tensor rows = context_.KeyRowShifts(in.u, in.half_norm, in.keep);
  return at::maximum(std::get<0>(at::cummax(rows, 1)), prefix.shift);
}

LinearAttention::CausalInputs LinearAttention::CausalChunkInputs(
    const HeadGroup& group, int64_t begin, int64_t end) const {
  const at::Tensor xq = group.query.narrow(1, begin, end - begin);
  const at::Tensor xk = group.key.narrow(1, begin, end - begin);
  return {context_.QueryFeatures(context_.Project(xq, group.logits),
                                 context_.HalfSquaredNorm(xq)),
          context_.Project(xk, group.logits), context_.HalfSquaredNorm(xk),
          KeepSlice(group, begin, end), ValuesWithOnes(group, begin, end)};
}

at::Tensor LinearAttention::CausalKeyFeatures(const CausalInputs& in,
                                              const at::Tensor& shift) const {
  at::Tensor features = context_.KeyFeatures(in.u, in.half_norm, shift);
  if (in.keep.defined()) features.masked_fill_(DroppedRows(in.keep), 0.0f);
  return features;
}

// One causal chunk: the exact masked product inside the chunk plus the
// prefix's sums; then the chunk joins the prefix. Query i sees the keys
// shifted by its CausalShifts c_i. Each key's features are formed at its
// own c_j and rescaled by exp(c_j − c_i) ≤ 1, which neither overflows nor
// loses what c_i keeps; ε·Σv is added unshifted.
void LinearAttention::CausalChunk(const HeadGroup& group, KeyState& prefix,
                                  int64_t begin, int64_t end) const {
  const CausalInputs in = CausalChunkInputs(group, begin, end);
  const at::Tensor& values = in.values;
  const at::Tensor running = CausalShifts(prefix, in);
  const bool per_query = running.defined() && running.size(1) > 1;
  at::Tensor key_features = CausalKeyFeatures(in, running);
  at::Tensor scores = at::bmm(in.query_features, key_features.transpose(1, 2));
  if (per_query) {
    // exp(c_j − c_i) for key j and query i; above the diagonal (masked) c_j
    // may exceed c_i, so the exponent is capped at 0 there.
    scores.mul_(at::exp((running.transpose(1, 2) - running).clamp_max_(0)));
  }
  at::Tensor numerators = at::bmm(scores.tril_(), values);
  at::Tensor from_prefix = at::bmm(in.query_features, prefix.sums);
  if (running.defined()) from_prefix.mul_(at::exp(prefix.shift - running));
  numerators.add_(from_prefix);
  if (context_.epsilon() != 0.0f) {
    numerators.add_(in.query_features.sum(-1, /*keepdim=*/true) *
                    (values.cumsum(1) + prefix.value_sums) *
                    context_.epsilon());
  }
  group.out.narrow(1, begin, end - begin).copy_(DivideByLastColumn(numerators));
  // The chunk joins the prefix at the chunk's last shift: key j's features
  // times exp(c_j − c_last), a factor per row, applied to its [v | 1] (dv + 1
  // columns) rather than to its features (F).
  at::Tensor rescaled_values = values;
  if (running.defined()) {
    const at::Tensor last = running.narrow(1, running.size(1) - 1, 1);
    Rescale(prefix, last);
    if (per_query) rescaled_values = values * at::exp(running - last);
  }
  prefix.sums.baddbmm_(key_features.transpose(1, 2), rescaled_values);
  prefix.value_sums.add_(values.sum(1, /*keepdim=*/true));
}

// kExp normalises each key feature over the keys a query sees, so the
// prefix is normalised per position: cumulative sums inside the chunk,
// (G, c, F, dv + 1), which is chunk-sized, never sequence-sized. The
// per-feature shift cancels in that normalisation; it is the running
// maximum up to the chunk's end, so that no later key changes it.
void LinearAttention::CausalChunkExp(const HeadGroup& group, KeyState& prefix,
                                     int64_t begin, int64_t end) const {
  const CausalInputs in = CausalChunkInputs(group, begin, end);
  Rescale(prefix, at::maximum(prefix.shift,
                              context_.KeyShift(in.u, in.half_norm, in.keep)));
  const at::Tensor key_features = CausalKeyFeatures(in, prefix.shift);
  const at::Tensor cumulative =
      (key_features.unsqueeze(-1) * in.values.unsqueeze(2)).cumsum(1) +
      prefix.sums.unsqueeze(1);
  const at::Tensor normalised = DivideByLastColumn(cumulative);
  group.out.narrow(1, begin, end - begin)
      .copy_((in.query_features.unsqueeze(-1) * normalised).sum(2));
  prefix.sums.copy_(cumulative.select(1, cumulative.size(1) - 1));
  prefix.value_sums.add_(in.values.sum(1, /*keepdim=*/true));
}

int64_t TargetTasks(bool parallel, size_t groups) {
  return parallel ? 4 * static_cast<int64_t>(at::get_num_threads())
                  : static_cast<int64_t>(groups);
}

// Each group's key ranges, chosen from its own length alone, so that a
// sequence's keys split the same way whatever else is in the batch and
// however many threads there are. Its key sums, merged range by range in
// token order, are then the same bits packed or alone: the bfloat16 path
// rounds them to bfloat16, where a float32 summation order's last bit would
// otherwise flip a stored value. About kKeyRangeTokens per range (each
// range costs a merge on the calling thread), at most kMaxKeyRanges (a
// long sequence of four head groups keeps 16 threads busy); one range per
// group off the CPU, where the groups run in order.
std::vector<TokenRange> KeyRanges(const std::vector<HeadGroup>& groups,
                                  int64_t chunk, bool parallel) {
  constexpr int64_t kKeyRangeTokens = 4096;
  constexpr int64_t kMaxKeyRanges = 16;
  return SplitIntoParts(
      groups.size(), [&](size_t g) { return groups[g].key.size(1); }, chunk,
      [&](int64_t tokens) {
        return parallel
                   ? std::min(kMaxKeyRanges,
                              (tokens + kKeyRangeTokens - 1) / kKeyRangeTokens)
                   : int64_t{1};
      });
}

// Key sums of every range, in parallel.
std::vector<KeyState> AccumulateRanges(const LinearAttention& attention,
                                       const std::vector<HeadGroup>& groups,
                                       const std::vector<TokenRange>& ranges,
                                       bool parallel) {
  std::vector<KeyState> parts(ranges.size());
  ForEachTask(static_cast<int64_t>(ranges.size()), parallel, [&](int64_t i) {
    const TokenRange& r = ranges[i];
    parts[i] = attention.AccumulateKeys(groups[r.group], r.begin, r.end);
  });
  return parts;
}

// Each group's key sums over all of its ranges, merged in token order,
// and the state its queries multiply (QueryState); the groups in parallel
// (a merge, and the state, are a few small tensor operations per group,
// which on the calling thread alone kept the other threads waiting: 3% of
// a batch of 64 short sequences on AMD's Zen 5). The parts are released as
// they are used.
std::vector<at::Tensor> MergeRanges(const LinearAttention& attention,
                                    const std::vector<HeadGroup>& groups,
                                    const std::vector<TokenRange>& ranges,
                                    std::vector<KeyState>& parts,
                                    bool parallel) {
  std::vector<std::vector<size_t>> ranges_of(groups.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    ranges_of[ranges[i].group].push_back(i);
  }
  std::vector<at::Tensor> states(groups.size());
  ForEachTask(static_cast<int64_t>(groups.size()), parallel, [&](int64_t g) {
    // One range (every sequence shorter than a range) is its own total:
    // merging it into an empty state would only copy it, a handful of small
    // tensor operations per sequence, head and layer that cost short
    // inputs more than their attention.
    KeyState total;
    if (ranges_of[g].size() == 1) {
      total = std::move(parts[ranges_of[g].front()]);
    } else {
      total = attention.EmptyState(groups[g]);
      for (const size_t i : ranges_of[g]) {
        attention.Merge(total, parts[i]);
        parts[i] = KeyState();
      }
    }
    states[g] = attention.QueryState(std::move(total));
  });
  return states;
}

void RunNonCausal(const LinearAttention& attention,
                  const AttentionOptions& options,
                  const std::vector<HeadGroup>& groups, bool parallel) {
  const std::vector<TokenRange> key_ranges =
      KeyRanges(groups, options.chunk_tokens, parallel);
  std::vector<KeyState> parts =
      AccumulateRanges(attention, groups, key_ranges, parallel);
  std::vector<at::Tensor> states =
      MergeRanges(attention, groups, key_ranges, parts, parallel);
  const std::vector<TokenRange> query_ranges = SplitIntoRanges(
      groups.size(), [&](size_t g) { return groups[g].query.size(1); },
      options.chunk_tokens, TargetTasks(parallel, groups.size()));
  ForEachTask(
      static_cast<int64_t>(query_ranges.size()), parallel, [&](int64_t i) {
        const TokenRange& r = query_ranges[i];
        attention.Queries(groups[r.group], states[r.group], r.begin, r.end);
      });
}

// Causal: the key sums of each range (in parallel), then each range's
// prefix (a scan over ranges, in order), then each range's outputs (in
// parallel). A prefix keeps the shift of the keys it holds, so no range's
// outputs depend on a later key (CausalChunk).
void RunCausal(const LinearAttention& attention,
               const AttentionOptions& options,
               const std::vector<HeadGroup>& groups, bool parallel) {
  const std::vector<TokenRange> ranges =
      KeyRanges(groups, options.causal_chunk_tokens, parallel);
  const std::vector<KeyState> parts =
      AccumulateRanges(attention, groups, ranges, parallel);
  std::vector<KeyState> prefixes(ranges.size());
  std::vector<KeyState> running;
  for (const HeadGroup& group : groups) {
    running.push_back(attention.EmptyState(group));
  }
  for (size_t i = 0; i < ranges.size(); ++i) {
    const KeyState& run = running[ranges[i].group];
    prefixes[i] = {run.sums.clone(),
                   run.shift.defined() ? run.shift.clone() : at::Tensor(),
                   run.value_sums.clone()};
    attention.Merge(running[ranges[i].group], parts[i]);
  }
  // Each prefix is used by one range, which extends it in place.
  ForEachTask(static_cast<int64_t>(ranges.size()), parallel, [&](int64_t i) {
    const TokenRange& r = ranges[i];
    attention.CausalRange(groups[r.group], prefixes[i], r.begin, r.end);
  });
}

}  // namespace

void RunLinearAttention(const FeatureContext& context,
                        const AttentionOptions& options,
                        const std::vector<HeadGroup>& groups, bool parallel) {
  if (groups.empty()) return;
  const LinearAttention attention(context, options);
  // FAVOR++ picks each group's feature map from its statistics first; the
  // causal path uses the whole sequence's (docs/attention.md says why).
  std::vector<HeadGroup> with_logits;
  if (context.traits().coefficient_per_sequence) {
    with_logits = groups;
    SetFavorPlusPlusLogits(context, options.chunk_tokens, with_logits,
                           parallel);
  }
  const std::vector<HeadGroup>& work =
      with_logits.empty() ? groups : with_logits;
  if (options.causal) {
    RunCausal(attention, options, work, parallel);
  } else {
    RunNonCausal(attention, options, work, parallel);
  }
}

}  // namespace favor::attention
