#include "server/attention/linear_attention.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "server/attention/cpu_gemm.h"
#include "server/attention/cpu_kernels.h"

namespace favor::attention {
namespace {

// Σ over a range of keys of φ̃(k)[v | 1]ᵀ, where φ̃ is the key feature
// shifted by `shift` and without ε, and of [v | 1] itself (for the ε term).
// Masked keys contribute nothing.
struct KeyState {
  at::Tensor sums;        // (G, F, dv + 1)
  at::Tensor shift;       // (G, 1, 1) or (G, 1, F); undefined: no shift
  at::Tensor value_sums;  // (G, 1, dv + 1)
};

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
  at::Tensor QueryState(const KeyState& keys) const;
  void Queries(const HeadGroup& group, const at::Tensor& state, int64_t begin,
               int64_t end) const;
  // Causal outputs for tokens [begin, end), given the keys before `begin`
  // (`prefix`, shifted by the sequence's `shift`).
  void CausalRange(const HeadGroup& group, KeyState prefix,
                   const at::Tensor& shift, int64_t begin, int64_t end) const;

 private:
  bool UseCpuFastPath(const HeadGroup& group) const;
  KeyState AccumulateKeysCpu(const HeadGroup& group, int64_t begin,
                             int64_t end) const;
  void QueriesCpu(const HeadGroup& group, const at::Tensor& state,
                  int64_t begin, int64_t end) const;
  struct ChunkTerms {
    at::Tensor query_features;  // (G, c, F)
    at::Tensor key_features;    // (G, c, F), padding rows 0
    at::Tensor values;          // (G, c, dv + 1)
  };
  ChunkTerms CausalTerms(const HeadGroup& group, const at::Tensor& shift,
                         int64_t begin, int64_t end, bool with_epsilon) const;
  void CausalChunk(const HeadGroup& group, KeyState& prefix,
                   const at::Tensor& shift, int64_t begin, int64_t end) const;
  void CausalChunkExp(const HeadGroup& group, KeyState& prefix,
                      const at::Tensor& shift, int64_t begin,
                      int64_t end) const;
  at::Tensor ValuesWithOnes(const HeadGroup& group, int64_t begin,
                            int64_t end) const;
  at::Tensor KeepSlice(const HeadGroup& group, int64_t begin,
                       int64_t end) const;

  const FeatureContext& context_;
  const AttentionOptions& options_;
};

// The CPU path's per-task work buffers, rows × cols floats, reused by each
// thread from one call to the next. Fresh ones would be mapped anew for
// every task (glibc maps blocks this size) and faulted in page by page when
// OpenBLAS first zeroes them: measured as three quarters of a 4k-token
// call's page faults. A thread keeps its buffers (chunk × m and chunk × dv
// floats: 80 KiB on the AVX-512 path's 64-token steps, 640 KiB on the BLAS
// path's 512) until it exits.
enum class ScratchSlot { kFeatures = 0, kValueRows = 1 };
float* Scratch(ScratchSlot slot, int64_t rows, int64_t cols) {
  // Tensors for LibTorch's allocator's 64-byte alignment: rows that start
  // mid-cache-line would slow every vector load of cpu::Gemm.
  thread_local at::Tensor buffers[2];
  at::Tensor& buffer = buffers[static_cast<int>(slot)];
  if (!buffer.defined() || buffer.numel() < rows * cols) {
    buffer = at::empty({rows * cols}, at::kFloat);
  }
  return buffer.data_ptr<float>();
}

// c (+)= a · b for the CPU path, on raw row-major operands (b and c with
// unit column stride): the AVX-512 cpu::Gemm where this CPU has it, else
// the BLAS. Raw pointers, not tensors: the loops around it take 64-token
// steps, where the cost of creating tensor views would show.
void MatMul(int64_t rows, int64_t cols, int64_t depth, cpu::MatrixView a,
            const float* b, int64_t ldb, float* c, int64_t ldc,
            bool accumulate) {
  if (cpu::GemmIsFast()) {
    cpu::Gemm(rows, cols, depth, a, b, ldb, c, ldc, accumulate);
    return;
  }
  const auto wrap = [](const float* data, int64_t r, int64_t cs, int64_t rs,
                       int64_t col_stride) {
    return at::from_blob(const_cast<float*>(data), {r, cs}, {rs, col_stride},
                         at::kFloat);
  };
  const at::Tensor a_t =
      wrap(a.data, rows, depth, a.row_stride, a.column_stride);
  const at::Tensor b_t = wrap(b, depth, cols, ldb, 1);
  at::Tensor c_t = wrap(c, rows, cols, ldc, 1);
  if (accumulate) {
    c_t.addmm_(a_t, b_t);
  } else {
    at::mm_out(c_t, a_t, b_t);
  }
}

// Tokens per step of the CPU path. cpu::Gemm is fastest on blocks whose
// features stay in the L2 cache between its two products (64 tokens × m =
// 256 features is 64 KiB); the BLAS wants larger ones to amortise its
// packing.
int64_t CpuChunkTokens(const AttentionOptions& options, int64_t tokens) {
  constexpr int64_t kGemmBlockTokens = 64;
  const int64_t chunk = cpu::GemmIsFast()
                            ? std::min(options.chunk_tokens, kGemmBlockTokens)
                            : options.chunk_tokens;
  return std::min(chunk, tokens);
}

// `rows` rows of values (row stride `stride`) with padding rows zeroed
// (copied into `scratch`, rows × dv, only when there is a mask), and their
// sum and count added to `value_sums` (dv + 1 floats) for the ε term.
// Returns the rows to use.
cpu::MatrixView KeptValues(const float* values, int64_t stride, int64_t rows,
                           int64_t dv, const uint8_t* keep, float* scratch,
                           float* value_sums) {
  cpu::MatrixView v{values, stride, 1};
  if (keep != nullptr) {
    for (int64_t i = 0; i < rows; ++i) {
      if (keep[i]) {
        std::copy(values + i * stride, values + i * stride + dv,
                  scratch + i * dv);
      } else {
        std::fill(scratch + i * dv, scratch + (i + 1) * dv, 0.0f);
      }
    }
    v = {scratch, dv, 1};
  }
  cpu::AddKeptRows(v.data, rows, dv, v.row_stride, keep, value_sums);
  return v;
}

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
  return group.keep.narrow(0, begin, end - begin);
}

at::Tensor LinearAttention::ValuesWithOnes(const HeadGroup& group,
                                           int64_t begin, int64_t end) const {
  const at::Tensor v = group.value.narrow(1, begin, end - begin).to(at::kFloat);
  at::Tensor ones = at::ones({v.size(0), v.size(1), 1}, v.options());
  at::Tensor with_ones = at::cat({v, ones}, -1);
  const at::Tensor keep = KeepSlice(group, begin, end);
  if (!keep.defined()) return with_ones;
  return with_ones.masked_fill(keep.logical_not().view({1, -1, 1}), 0.0f);
}

bool LinearAttention::UseCpuFastPath(const HeadGroup& group) const {
  return context_.kernel() == Kernel::kFavorPositive &&
         group.key.device().is_cpu() && group.key.size(0) == 1 &&
         group.query.scalar_type() == at::kFloat &&
         group.key.scalar_type() == at::kFloat &&
         group.value.scalar_type() == at::kFloat &&
         group.out.scalar_type() == at::kFloat && group.query.stride(2) == 1 &&
         group.key.stride(2) == 1 && group.value.stride(2) == 1 &&
         group.out.stride(2) == 1;
}

KeyState LinearAttention::AccumulateKeys(const HeadGroup& group, int64_t begin,
                                         int64_t end) const {
  if (UseCpuFastPath(group)) return AccumulateKeysCpu(group, begin, end);
  KeyState state = EmptyState(group);
  for (int64_t start = begin; start < end; start += options_.chunk_tokens) {
    const int64_t stop = std::min(end, start + options_.chunk_tokens);
    const at::Tensor x = group.key.narrow(1, start, stop - start);
    const at::Tensor keep = KeepSlice(group, start, stop);
    const at::Tensor u = context_.Project(x);
    const at::Tensor half = context_.HalfSquaredNorm(x);
    if (state.shift.defined()) {
      Rescale(state,
              at::maximum(state.shift, context_.KeyShift(u, half, keep)));
    }
    at::Tensor features = context_.KeyFeatures(u, half, state.shift);
    if (keep.defined()) {
      features.masked_fill_(keep.logical_not().view({1, -1, 1}), 0.0f);
    }
    const at::Tensor values = ValuesWithOnes(group, start, stop);
    state.sums.baddbmm_(features.transpose(1, 2), values);
    state.value_sums.add_(values.sum(1, /*keepdim=*/true));
  }
  return state;
}

// The CPU path of AccumulateKeys for FAVOR+: fused loops around
// single-threaded BLAS calls, keeping Σφ̃(k)vᵀ (m×dv, BLAS-friendly) and
// Σφ̃(k) (m) apart. The shift runs ahead of the data (raised only when a
// chunk would overflow) and is settled to the true max at the end, which is
// what the reference's global key max gives.
KeyState LinearAttention::AccumulateKeysCpu(const HeadGroup& group,
                                            int64_t begin, int64_t end) const {
  const int64_t d = group.key.size(2), dv = group.value.size(2);
  const int64_t m = context_.num_features();
  // Buffers no larger than the range: short sequences are common.
  const int64_t chunk = CpuChunkTokens(options_, end - begin);
  const at::Tensor key = group.key[0], value = group.value[0];
  const uint8_t* keep =
      group.keep.defined()
          ? reinterpret_cast<const uint8_t*>(group.keep.data_ptr<bool>())
          : nullptr;
  at::Tensor sums = at::zeros({m, dv}, at::kFloat);
  at::Tensor feature_sums = at::zeros({m}, at::kFloat);
  at::Tensor value_sums = at::zeros({dv + 1}, at::kFloat);
  float* const sums_data = sums.data_ptr<float>();
  float* const feature_sums_data = feature_sums.data_ptr<float>();
  float* const value_sums_data = value_sums.data_ptr<float>();
  float* const u = Scratch(ScratchSlot::kFeatures, chunk, m);
  float* const kept_values = Scratch(ScratchSlot::kValueRows, chunk, dv);
  const float* const projection =
      context_.scaled_projection_t().data_ptr<float>();
  const float* const keys = key.data_ptr<float>();
  const float* const values = value.data_ptr<float>();
  const int64_t key_stride = key.stride(0), value_stride = value.stride(0);
  std::vector<float> half(chunk);
  float shift = FeatureContext::kEmptyShift;
  float max_seen = FeatureContext::kEmptyShift;
  const float half_scale = 0.5f / std::sqrt(static_cast<float>(d));
  for (int64_t start = begin; start < end; start += chunk) {
    const int64_t rows = std::min(end, start + chunk) - start;
    const float* x = keys + start * key_stride;
    const uint8_t* keep_rows = keep != nullptr ? keep + start : nullptr;
    MatMul(rows, m, d, {x, key_stride, 1}, projection, m, u, m,
           /*accumulate=*/false);
    cpu::RowSquaredNorms(x, rows, d, key_stride, half_scale, half.data());
    const float shift_before = shift;
    max_seen = std::max(max_seen, cpu::ExpWithRunningShift(
                                      u, half.data(), keep_rows, &shift, rows,
                                      m, feature_sums_data, max_seen));
    if (shift != shift_before) {
      const float scale = std::exp(shift_before - shift);
      for (int64_t i = 0; i < m * dv; ++i) sums_data[i] *= scale;
    }
    const cpu::MatrixView v =
        KeptValues(values + start * value_stride, value_stride, rows, dv,
                   keep_rows, kept_values, value_sums_data);
    MatMul(m, dv, rows, {u, 1, m}, v.data, v.row_stride, sums_data, dv,
           /*accumulate=*/true);
  }
  // Settle the shift on the true max over the range.
  if (max_seen > shift) {
    const float scale = std::exp(shift - max_seen);
    sums.mul_(scale);
    feature_sums.mul_(scale);
  }
  const auto opts = at::TensorOptions().dtype(at::kFloat);
  return {at::cat({sums, feature_sums.unsqueeze(1)}, 1).unsqueeze(0),
          at::full({1, 1, 1}, max_seen, opts), value_sums.view({1, 1, -1})};
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

at::Tensor LinearAttention::QueryState(const KeyState& keys) const {
  if (context_.kernel() == Kernel::kExp) {
    const at::Tensor normalised = DivideByLastColumn(keys.sums);
    return at::cat({normalised, at::ones_like(keys.sums.narrow(-1, 0, 1))}, -1);
  }
  if (context_.epsilon() != 0.0f) {
    return keys.sums + context_.epsilon() * keys.value_sums;
  }
  return keys.sums;
}

void LinearAttention::Queries(const HeadGroup& group, const at::Tensor& state,
                              int64_t begin, int64_t end) const {
  if (UseCpuFastPath(group)) return QueriesCpu(group, state, begin, end);
  for (int64_t start = begin; start < end; start += options_.chunk_tokens) {
    const int64_t stop = std::min(end, start + options_.chunk_tokens);
    const at::Tensor x = group.query.narrow(1, start, stop - start);
    const at::Tensor features = context_.QueryFeatures(
        context_.Project(x), context_.HalfSquaredNorm(x));
    group.out.narrow(1, start, stop - start)
        .copy_(DivideByLastColumn(at::bmm(features, state)));
  }
}

void LinearAttention::QueriesCpu(const HeadGroup& group,
                                 const at::Tensor& state, int64_t begin,
                                 int64_t end) const {
  const int64_t d = group.query.size(2), dv = group.value.size(2);
  const int64_t m = context_.num_features();
  const int64_t chunk = CpuChunkTokens(options_, end - begin);
  const at::Tensor sums = state[0].narrow(1, 0, dv).contiguous();
  const at::Tensor feature_sums = state[0].select(1, dv).contiguous();
  float* const u = Scratch(ScratchSlot::kFeatures, chunk, m);
  float* const numerators = Scratch(ScratchSlot::kValueRows, chunk, dv);
  const float* const projection =
      context_.scaled_projection_t().data_ptr<float>();
  std::vector<float> half(chunk), denominators(chunk);
  const float half_scale = 0.5f / std::sqrt(static_cast<float>(d));
  const at::Tensor query = group.query[0], out = group.out[0];
  const float* const queries = query.data_ptr<float>();
  const float* const sums_data = sums.data_ptr<float>();
  const float* const feature_sums_data = feature_sums.data_ptr<float>();
  float* const outputs = out.data_ptr<float>();
  const int64_t query_stride = query.stride(0), out_stride = out.stride(0);
  for (int64_t start = begin; start < end; start += chunk) {
    const int64_t rows = std::min(end, start + chunk) - start;
    const float* x = queries + start * query_stride;
    MatMul(rows, m, d, {x, query_stride, 1}, projection, m, u, m,
           /*accumulate=*/false);
    cpu::RowSquaredNorms(x, rows, d, query_stride, half_scale, half.data());
    cpu::QueryFeaturesWithDot(u, half.data(), rows, m, context_.epsilon(),
                              feature_sums_data, denominators.data());
    MatMul(rows, dv, m, {u, m, 1}, sums_data, dv, numerators, dv,
           /*accumulate=*/false);
    cpu::DivideRows(numerators, denominators.data(), rows, dv,
                    outputs + start * out_stride, out_stride);
  }
}

void LinearAttention::CausalRange(const HeadGroup& group, KeyState prefix,
                                  const at::Tensor& shift, int64_t begin,
                                  int64_t end) const {
  for (int64_t start = begin; start < end;
       start += options_.causal_chunk_tokens) {
    const int64_t stop = std::min(end, start + options_.causal_chunk_tokens);
    if (context_.kernel() == Kernel::kExp) {
      CausalChunkExp(group, prefix, shift, start, stop);
    } else {
      CausalChunk(group, prefix, shift, start, stop);
    }
  }
}

// The features and [v | 1] of one causal chunk, padding keys zeroed; key
// features shifted by the sequence's `shift`, with ε when `with_epsilon`.
LinearAttention::ChunkTerms LinearAttention::CausalTerms(
    const HeadGroup& group, const at::Tensor& shift, int64_t begin, int64_t end,
    bool with_epsilon) const {
  const at::Tensor xq = group.query.narrow(1, begin, end - begin);
  const at::Tensor xk = group.key.narrow(1, begin, end - begin);
  ChunkTerms terms;
  terms.query_features = context_.QueryFeatures(context_.Project(xq),
                                                context_.HalfSquaredNorm(xq));
  terms.key_features = context_.KeyFeatures(
      context_.Project(xk), context_.HalfSquaredNorm(xk), shift);
  if (with_epsilon) terms.key_features.add_(context_.epsilon());
  const at::Tensor keep = KeepSlice(group, begin, end);
  if (keep.defined()) {
    terms.key_features.masked_fill_(keep.logical_not().view({1, -1, 1}), 0.0f);
  }
  terms.values = ValuesWithOnes(group, begin, end);
  return terms;
}

// One causal chunk: the exact masked product inside the chunk plus the
// prefix state of everything before it; then the chunk joins the prefix.
void LinearAttention::CausalChunk(const HeadGroup& group, KeyState& prefix,
                                  const at::Tensor& shift, int64_t begin,
                                  int64_t end) const {
  const ChunkTerms t = CausalTerms(group, shift, begin, end, true);
  const at::Tensor scores =
      at::bmm(t.query_features, t.key_features.transpose(1, 2)).tril_();
  at::Tensor numerators = at::bmm(scores, t.values);
  numerators.baddbmm_(t.query_features, prefix.sums);
  group.out.narrow(1, begin, end - begin).copy_(DivideByLastColumn(numerators));
  prefix.sums.baddbmm_(t.key_features.transpose(1, 2), t.values);
}

// kExp normalises each key feature over the keys a query sees, so the
// prefix is normalised per position: cumulative sums inside the chunk,
// (G, c, F, dv + 1), which is chunk-sized, never sequence-sized.
void LinearAttention::CausalChunkExp(const HeadGroup& group, KeyState& prefix,
                                     const at::Tensor& shift, int64_t begin,
                                     int64_t end) const {
  const ChunkTerms t = CausalTerms(group, shift, begin, end, false);
  const at::Tensor cumulative =
      (t.key_features.unsqueeze(-1) * t.values.unsqueeze(2)).cumsum(1) +
      prefix.sums.unsqueeze(1);
  const at::Tensor normalised = DivideByLastColumn(cumulative);
  group.out.narrow(1, begin, end - begin)
      .copy_((t.query_features.unsqueeze(-1) * normalised).sum(2));
  prefix.sums.copy_(cumulative.select(1, cumulative.size(1) - 1));
}

int64_t TargetTasks(bool parallel, size_t groups) {
  return parallel ? 4 * static_cast<int64_t>(at::get_num_threads())
                  : static_cast<int64_t>(groups);
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

// Each group's key sums over all of its ranges.
std::vector<KeyState> MergeRanges(const LinearAttention& attention,
                                  const std::vector<HeadGroup>& groups,
                                  const std::vector<TokenRange>& ranges,
                                  const std::vector<KeyState>& parts) {
  std::vector<KeyState> totals;
  for (const HeadGroup& group : groups) {
    totals.push_back(attention.EmptyState(group));
  }
  for (size_t i = 0; i < ranges.size(); ++i) {
    attention.Merge(totals[ranges[i].group], parts[i]);
  }
  return totals;
}

void RunNonCausal(const LinearAttention& attention,
                  const AttentionOptions& options,
                  const std::vector<HeadGroup>& groups, bool parallel) {
  const int64_t tasks = TargetTasks(parallel, groups.size());
  const std::vector<TokenRange> key_ranges = SplitIntoRanges(
      groups.size(), [&](size_t g) { return groups[g].key.size(1); },
      options.chunk_tokens, tasks);
  const std::vector<KeyState> parts =
      AccumulateRanges(attention, groups, key_ranges, parallel);
  const std::vector<KeyState> totals =
      MergeRanges(attention, groups, key_ranges, parts);
  std::vector<at::Tensor> states;
  for (const KeyState& total : totals) {
    states.push_back(attention.QueryState(total));
  }
  const std::vector<TokenRange> query_ranges = SplitIntoRanges(
      groups.size(), [&](size_t g) { return groups[g].query.size(1); },
      options.chunk_tokens, tasks);
  ForEachTask(
      static_cast<int64_t>(query_ranges.size()), parallel, [&](int64_t i) {
        const TokenRange& r = query_ranges[i];
        attention.Queries(groups[r.group], states[r.group], r.begin, r.end);
      });
}

// Causal: the key sums of each range (in parallel), then each range's
// prefix (a scan over ranges, in order), then each range's outputs (in
// parallel). Every range uses its sequence's global key shift, as the
// reference implementation does.
void RunCausal(const LinearAttention& attention,
               const AttentionOptions& options, float epsilon,
               const std::vector<HeadGroup>& groups, bool parallel) {
  const std::vector<TokenRange> ranges = SplitIntoRanges(
      groups.size(), [&](size_t g) { return groups[g].key.size(1); },
      options.causal_chunk_tokens, TargetTasks(parallel, groups.size()));
  const std::vector<KeyState> parts =
      AccumulateRanges(attention, groups, ranges, parallel);
  const std::vector<KeyState> totals =
      MergeRanges(attention, groups, ranges, parts);
  // Prefixes with the global shift: shifting to the total's shift first
  // makes every merge below a plain sum.
  std::vector<KeyState> prefixes(ranges.size());
  std::vector<KeyState> running;
  for (size_t g = 0; g < groups.size(); ++g) {
    running.push_back(attention.EmptyState(groups[g]));
    if (totals[g].shift.defined()) running[g].shift = totals[g].shift.clone();
  }
  for (size_t i = 0; i < ranges.size(); ++i) {
    KeyState& run = running[ranges[i].group];
    prefixes[i] = {run.sums + epsilon * run.value_sums, run.shift,
                   run.value_sums.clone()};
    attention.Merge(run, parts[i]);
  }
  // Each prefix is used by one range, which extends it in place.
  ForEachTask(static_cast<int64_t>(ranges.size()), parallel, [&](int64_t i) {
    const TokenRange& r = ranges[i];
    attention.CausalRange(groups[r.group], prefixes[i], totals[r.group].shift,
                          r.begin, r.end);
  });
}

}  // namespace

void RunLinearAttention(const FeatureContext& context,
                        const AttentionOptions& options,
                        const std::vector<HeadGroup>& groups) {
  if (groups.empty()) return;
  const LinearAttention attention(context, options);
  const bool parallel = groups.front().query.device().is_cpu();
  if (options.causal) {
    RunCausal(attention, options, context.epsilon(), groups, parallel);
  } else {
    RunNonCausal(attention, options, groups, parallel);
  }
}

}  // namespace favor::attention
