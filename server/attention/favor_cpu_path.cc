#include "server/attention/favor_cpu_path.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "server/attention/cpu_gemm.h"
#include "server/attention/cpu_kernels.h"

namespace favor::attention {
namespace {

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

// The group's FAVOR++ logit map for the raw loops (identity for FAVOR+);
// the bias is contiguous (FeatureContext::FavorPlusPlusLogits makes it).
cpu::LogitAffine AffineOf(const HeadGroup& group) {
  if (!group.logits.scale.defined()) return {};
  return {group.logits.scale.item<float>(),
          group.logits.bias.data_ptr<float>()};
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

// The key sums of one group's range, step by step: Σφ̃(k)vᵀ (m×dv,
// BLAS-friendly) and Σφ̃(k) (m) kept apart. The shift runs ahead of the data
// (raised only when a step would overflow) and is settled to the true max at
// the end, which is what the reference's global key max gives.
class KeyAccumulator {
 public:
  KeyAccumulator(const FeatureContext& context, const HeadGroup& group,
                 int64_t chunk);

  // Adds keys [start, start + rows).
  void Step(int64_t start, int64_t rows);
  // The sums with the shift settled on the maximum seen.
  KeyState Finish();

 private:
  const int64_t d_, dv_, m_;
  // Σφ̃(k)vᵀ, Σφ̃(k) and Σ[v | 1], and raw pointers into them and the inputs,
  // taken once: the steps are short enough for tensor accessors to show.
  at::Tensor sums_, feature_sums_, value_sums_;
  float* const sums_data_;
  float* const feature_sums_data_;
  float* const value_sums_data_;
  const float* const keys_;
  const float* const values_;
  const int64_t key_stride_, value_stride_;
  const uint8_t* const keep_;
  const float* const projection_;
  float* const features_;
  float* const kept_values_;
  std::vector<float> half_;
  const float half_scale_;
  const cpu::LogitAffine logits_;
  float shift_ = FeatureContext::kEmptyShift;
  float max_seen_ = FeatureContext::kEmptyShift;
};

KeyAccumulator::KeyAccumulator(const FeatureContext& context,
                               const HeadGroup& group, int64_t chunk)
    : d_(group.key.size(2)),
      dv_(group.value.size(2)),
      m_(context.num_features()),
      sums_(at::zeros({m_, dv_}, at::kFloat)),
      feature_sums_(at::zeros({m_}, at::kFloat)),
      value_sums_(at::zeros({dv_ + 1}, at::kFloat)),
      sums_data_(sums_.data_ptr<float>()),
      feature_sums_data_(feature_sums_.data_ptr<float>()),
      value_sums_data_(value_sums_.data_ptr<float>()),
      keys_(group.key.data_ptr<float>()),
      values_(group.value.data_ptr<float>()),
      key_stride_(group.key.stride(1)),
      value_stride_(group.value.stride(1)),
      keep_(group.keep.defined()
                ? reinterpret_cast<const uint8_t*>(group.keep.data_ptr<bool>())
                : nullptr),
      projection_(context.scaled_projection_t().data_ptr<float>()),
      features_(Scratch(ScratchSlot::kFeatures, chunk, m_)),
      kept_values_(Scratch(ScratchSlot::kValueRows, chunk, dv_)),
      half_(chunk),
      half_scale_(0.5f / std::sqrt(static_cast<float>(d_))),
      logits_(AffineOf(group)) {}

void KeyAccumulator::Step(int64_t start, int64_t rows) {
  const float* x = keys_ + start * key_stride_;
  const uint8_t* keep_rows = keep_ != nullptr ? keep_ + start : nullptr;
  MatMul(rows, m_, d_, {x, key_stride_, 1}, projection_, m_, features_, m_,
         /*accumulate=*/false);
  cpu::RowSquaredNorms(x, rows, d_, key_stride_, half_scale_, half_.data());
  const float shift_before = shift_;
  max_seen_ =
      std::max(max_seen_, cpu::ExpWithRunningShift(
                              features_, half_.data(), keep_rows, &shift_, rows,
                              m_, feature_sums_data_, max_seen_, logits_));
  if (shift_ != shift_before) {
    const float scale = std::exp(shift_before - shift_);
    for (int64_t i = 0; i < m_ * dv_; ++i) sums_data_[i] *= scale;
  }
  const cpu::MatrixView v =
      KeptValues(values_ + start * value_stride_, value_stride_, rows, dv_,
                 keep_rows, kept_values_, value_sums_data_);
  MatMul(m_, dv_, rows, {features_, 1, m_}, v.data, v.row_stride, sums_data_,
         dv_, /*accumulate=*/true);
}

KeyState KeyAccumulator::Finish() {
  if (max_seen_ > shift_) {
    const float scale = std::exp(shift_ - max_seen_);
    sums_.mul_(scale);
    feature_sums_.mul_(scale);
  }
  const auto opts = at::TensorOptions().dtype(at::kFloat);
  return {at::cat({sums_, feature_sums_.unsqueeze(1)}, 1).unsqueeze(0),
          at::full({1, 1, 1}, max_seen_, opts), value_sums_.view({1, 1, -1})};
}

}  // namespace

bool FavorCpuPathApplies(const FeatureContext& context,
                         const HeadGroup& group) {
  return (context.kernel() == Kernel::kFavorPositive ||
          context.kernel() == Kernel::kFavorPlusPlus) &&
         group.key.device().is_cpu() && group.key.size(0) == 1 &&
         group.query.scalar_type() == at::kFloat &&
         group.key.scalar_type() == at::kFloat &&
         group.value.scalar_type() == at::kFloat &&
         group.out.scalar_type() == at::kFloat && group.query.stride(2) == 1 &&
         group.key.stride(2) == 1 && group.value.stride(2) == 1 &&
         group.out.stride(2) == 1;
}

KeyState AccumulateKeysFavorCpu(const FeatureContext& context,
                                const AttentionOptions& options,
                                const HeadGroup& group, int64_t begin,
                                int64_t end) {
  // Buffers no larger than the range: short sequences are common.
  const int64_t chunk = CpuChunkTokens(options, end - begin);
  KeyAccumulator accumulator(context, group, chunk);
  for (int64_t start = begin; start < end; start += chunk) {
    accumulator.Step(start, std::min(end, start + chunk) - start);
  }
  return accumulator.Finish();
}

void QueriesFavorCpu(const FeatureContext& context,
                     const AttentionOptions& options, const HeadGroup& group,
                     const at::Tensor& state, int64_t begin, int64_t end) {
  const int64_t d = group.query.size(2), dv = group.value.size(2);
  const int64_t m = context.num_features();
  const int64_t chunk = CpuChunkTokens(options, end - begin);
  const at::Tensor sums = state[0].narrow(1, 0, dv).contiguous();
  const at::Tensor feature_sums = state[0].select(1, dv).contiguous();
  float* const u = Scratch(ScratchSlot::kFeatures, chunk, m);
  float* const numerators = Scratch(ScratchSlot::kValueRows, chunk, dv);
  const float* const projection =
      context.scaled_projection_t().data_ptr<float>();
  std::vector<float> half(chunk), denominators(chunk);
  const float half_scale = 0.5f / std::sqrt(static_cast<float>(d));
  const at::Tensor query = group.query[0], out = group.out[0];
  const int64_t query_stride = query.stride(0), out_stride = out.stride(0);
  const float* const queries = query.data_ptr<float>();
  const float* const sums_data = sums.data_ptr<float>();
  const float* const feature_sums_data = feature_sums.data_ptr<float>();
  float* const outputs = out.data_ptr<float>();
  const cpu::LogitAffine logits = AffineOf(group);
  for (int64_t start = begin; start < end; start += chunk) {
    const int64_t rows = std::min(end, start + chunk) - start;
    const float* x = queries + start * query_stride;
    MatMul(rows, m, d, {x, query_stride, 1}, projection, m, u, m,
           /*accumulate=*/false);
    cpu::RowSquaredNorms(x, rows, d, query_stride, half_scale, half.data());
    cpu::QueryFeaturesWithDot(u, half.data(), rows, m, context.epsilon(),
                              feature_sums_data, denominators.data(), logits);
    MatMul(rows, dv, m, {u, m, 1}, sums_data, dv, numerators, dv,
           /*accumulate=*/false);
    cpu::DivideRows(numerators, denominators.data(), rows, dv,
                    outputs + start * out_stride, out_stride);
  }
}

}  // namespace favor::attention
