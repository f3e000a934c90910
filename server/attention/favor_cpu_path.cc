#include "server/attention/favor_cpu_path.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "server/attention/cpu_gemm.h"
#include "server/attention/cpu_gemm_bf16.h"
#include "server/attention/cpu_kernels.h"
#include "server/attention/favor_cpu_steps.h"

namespace favor::attention {
namespace {

using favor_cpu::KeptValueBits;
using favor_cpu::KeptValues;
using favor_cpu::MatMul;
using favor_cpu::PackedForAvx2;
using favor_cpu::PackedProduct;
using favor_cpu::ProductsOnGemm;
using favor_cpu::ProductsOnPackedAvx2;
using favor_cpu::Scratch;
using favor_cpu::ScratchBF16;
using favor_cpu::ScratchSlot;

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
  constexpr int64_t kPackedAvx2BlockTokens = 128;
  int64_t chunk = options.chunk_tokens;
  if (ProductsOnGemm()) chunk = std::min(chunk, kGemmBlockTokens);
  if (ProductsOnPackedAvx2()) chunk = std::min(chunk, kPackedAvx2BlockTokens);
  return std::min(chunk, tokens);
}

// Whether a group that the fused path serves runs in bfloat16: its inputs
// (and so its output) are bfloat16 and GemmBF16 has its AVX512-BF16 kernel.
// Its products take bfloat16 operands with float32 sums; the exp, the norms,
// the normaliser and every sum stay float32.
bool AllOfType(const HeadGroup& group, at::ScalarType type) {
  return group.query.scalar_type() == type && group.key.scalar_type() == type &&
         group.value.scalar_type() == type && group.out.scalar_type() == type;
}
bool RunsInBFloat16(const HeadGroup& group) {
  return AllOfType(group, at::kBFloat16) && cpu::GemmBF16IsFast();
}

template <typename T>
const T* DataOr(const at::Tensor& tensor, bool of_type) {
  return of_type ? static_cast<const T*>(tensor.data_ptr()) : nullptr;
}

// The projection (d × m) packed for GemmBF16, once per call: 32 KiB at d =
// 64, m = 256, a fraction of one step's work to pack.
const cpu::BFloat16Bits* PackedProjection(const FeatureContext& context) {
  const at::Tensor& w = context.scaled_projection_t();
  const int64_t d = w.size(0), m = w.size(1);
  cpu::BFloat16Bits* packed =
      ScratchBF16(ScratchSlot::kPackedProjection, cpu::PackedBF16Size(d, m));
  cpu::PackBF16(d, m, {w.data_ptr<float>(), w.stride(0), 1}, packed);
  return packed;
}

// The key sums of one group's range, step by step: Σφ̃(k)vᵀ (m×dv; in
// bfloat16 from the features and the values both packed along the tokens)
// and Σφ̃(k) (m) kept apart. The shift runs ahead of the data (raised only
// when a step would overflow) and is settled to the true max at the end,
// which is what the reference's global key max gives.
class KeyAccumulator {
 public:
  KeyAccumulator(const FeatureContext& context, const HeadGroup& group,
                 int64_t chunk);

  // Adds keys [start, start + rows).
  void Step(int64_t start, int64_t rows);
  // The sums with the shift settled on the maximum seen.
  KeyState Finish();

 private:
  // The first product into features_ and the keys' ‖k‖²/(2√d) into half_.
  void ProjectKeys(int64_t start, int64_t rows);
  // The value sums and Σφ̃(k)vᵀ of the step's features.
  void AddValues(int64_t start, int64_t rows, const uint8_t* keep_rows);

  const bool bf16_;
  const int64_t d_, dv_, m_;
  // The state Finish returns, (1, m, dv + 1): the products add Σφ̃(k)vᵀ
  // into its first dv columns (rows dv + 1 floats apart) and Finish writes
  // Σφ̃(k), kept apart in a plain buffer meanwhile, into the last; Σ[v | 1]
  // in the tensor it returns too; and raw pointers into them and the
  // inputs, taken once: the steps are short enough for tensor accessors to
  // show.
  at::Tensor state_;
  std::vector<float> feature_sums_;
  at::Tensor value_sums_;
  float* const sums_data_;
  float* const feature_sums_data_;
  float* const value_sums_data_;
  const float* const keys_;
  const float* const values_;
  const cpu::BFloat16Bits* const keys16_;
  const cpu::BFloat16Bits* const values16_;
  const int64_t key_stride_, value_stride_;
  const uint8_t* const keep_;
  const float* const projection_;
  // projection_ packed for the AVX2 tiles (ProductsOnPackedAvx2), else null.
  const float* const packed_projection_;
  const cpu::BFloat16Bits* const projection16_;
  float* const features_;
  float* const kept_values_;
  cpu::BFloat16Bits* const kept_values16_;
  cpu::BFloat16Bits* const features16_;
  cpu::BFloat16Bits* const values16_packed_;
  std::vector<float> half_;
  const float half_scale_;
  const cpu::LogitAffine logits_;
  float shift_ = FeatureContext::kEmptyShift;
  float max_seen_ = FeatureContext::kEmptyShift;
};

KeyAccumulator::KeyAccumulator(const FeatureContext& context,
                               const HeadGroup& group, int64_t chunk)
    : bf16_(RunsInBFloat16(group)),
      d_(group.key.size(2)),
      dv_(group.value.size(2)),
      m_(context.num_features()),
      state_(at::zeros({1, m_, dv_ + 1}, at::kFloat)),
      feature_sums_(m_),
      value_sums_(at::zeros({dv_ + 1}, at::kFloat)),
      sums_data_(state_.data_ptr<float>()),
      feature_sums_data_(feature_sums_.data()),
      value_sums_data_(value_sums_.data_ptr<float>()),
      keys_(DataOr<float>(group.key, !bf16_)),
      values_(DataOr<float>(group.value, !bf16_)),
      keys16_(DataOr<cpu::BFloat16Bits>(group.key, bf16_)),
      values16_(DataOr<cpu::BFloat16Bits>(group.value, bf16_)),
      key_stride_(group.key.stride(1)),
      value_stride_(group.value.stride(1)),
      keep_(group.keep.defined()
                ? reinterpret_cast<const uint8_t*>(group.keep.data_ptr<bool>())
                : nullptr),
      projection_(context.scaled_projection_t().data_ptr<float>()),
      packed_projection_(!bf16_ && ProductsOnPackedAvx2()
                             ? PackedForAvx2(ScratchSlot::kPackedProjectionF32,
                                             d_, m_, projection_, m_)
                             : nullptr),
      projection16_(bf16_ ? PackedProjection(context) : nullptr),
      features_(Scratch(ScratchSlot::kFeatures, chunk, m_)),
      kept_values_(Scratch(ScratchSlot::kValueRows, chunk, dv_)),
      kept_values16_(
          bf16_ && keep_ != nullptr
              ? ScratchBF16(ScratchSlot::kKeptValuesBF16, chunk * dv_)
              : nullptr),
      features16_(bf16_ ? ScratchBF16(ScratchSlot::kFeaturesBF16,
                                      cpu::PackedBF16Size(chunk, m_))
                        : nullptr),
      values16_packed_(bf16_ ? ScratchBF16(ScratchSlot::kValuesBF16,
                                           cpu::PackedBF16Size(chunk, dv_))
                             : nullptr),
      half_(chunk),
      half_scale_(0.5f / std::sqrt(static_cast<float>(d_))),
      logits_(AffineOf(group)) {}

void KeyAccumulator::ProjectKeys(int64_t start, int64_t rows) {
  if (!bf16_) {
    const float* x = keys_ + start * key_stride_;
    if (packed_projection_ != nullptr) {
      PackedProduct(rows, m_, d_, {x, key_stride_, 1}, packed_projection_,
                    features_, m_, /*accumulate=*/false);
    } else {
      MatMul(rows, m_, d_, {x, key_stride_, 1}, projection_, m_, features_,
             m_, /*accumulate=*/false);
    }
    cpu::RowSquaredNorms(x, rows, d_, key_stride_, half_scale_, half_.data());
    return;
  }
  const cpu::BFloat16Bits* x = keys16_ + start * key_stride_;
  cpu::GemmBF16(rows, m_, d_, x, key_stride_, projection16_, features_, m_,
                /*accumulate=*/false);
  cpu::RowSquaredNormsBF16(x, rows, d_, key_stride_, half_scale_, half_.data());
}

void KeyAccumulator::AddValues(int64_t start, int64_t rows,
                               const uint8_t* keep_rows) {
  if (!bf16_) {
    const cpu::MatrixView v =
        KeptValues(values_ + start * value_stride_, value_stride_, rows, dv_,
                   keep_rows, kept_values_, value_sums_data_);
    if (packed_projection_ != nullptr) {
      PackedProduct(m_, dv_, rows, {features_, 1, m_},
                    PackedForAvx2(ScratchSlot::kPackedValues, rows, dv_,
                                  v.data, v.row_stride),
                    sums_data_, dv_ + 1, /*accumulate=*/true);
    } else {
      MatMul(m_, dv_, rows, {features_, 1, m_}, v.data, v.row_stride,
             sums_data_, dv_ + 1, /*accumulate=*/true);
    }
    return;
  }
  // Σφ̃(k)vᵀ as φ̃ᵀ (m × rows) times v (rows × dv), both packed along the
  // tokens: the features rounded to bfloat16, the values' bits as they are.
  int64_t stride = 0;
  const cpu::BFloat16Bits* v =
      KeptValueBits(values16_ + start * value_stride_, value_stride_, rows, dv_,
                    keep_rows, kept_values16_, &stride);
  cpu::AddKeptRowsBF16(v, rows, dv_, stride, keep_rows, value_sums_data_);
  cpu::PackBF16(rows, m_, {features_, m_, 1}, features16_);
  cpu::PackBF16(rows, dv_, v, stride, values16_packed_);
  cpu::GemmBF16PackedA(m_, dv_, rows, features16_, values16_packed_, sums_data_,
                       dv_ + 1, /*accumulate=*/true);
}

void KeyAccumulator::Step(int64_t start, int64_t rows) {
  const uint8_t* keep_rows = keep_ != nullptr ? keep_ + start : nullptr;
  ProjectKeys(start, rows);
  const float shift_before = shift_;
  max_seen_ =
      std::max(max_seen_, cpu::ExpWithRunningShift(
                              features_, half_.data(), keep_rows, &shift_, rows,
                              m_, feature_sums_data_, max_seen_, logits_));
  // Sums made before the shift rose are rescaled to it; before the first
  // kept key there are none (all zero).
  if (shift_ != shift_before && shift_before != FeatureContext::kEmptyShift) {
    const float scale = std::exp(shift_before - shift_);
    for (int64_t i = 0; i < m_; ++i) {
      float* row = sums_data_ + i * (dv_ + 1);
      for (int64_t j = 0; j < dv_; ++j) row[j] *= scale;
    }
  }
  AddValues(start, rows, keep_rows);
}

KeyState KeyAccumulator::Finish() {
  // Σφ̃(k) into the state's last column, and the state settled on the
  // maximum in place: a loop rather than a handful of tensor operations,
  // which cost short sequences (one per head and layer) more than their
  // keys' arithmetic.
  const float scale = max_seen_ > shift_ ? std::exp(shift_ - max_seen_) : 1.0f;
  float* row = sums_data_;
  for (int64_t i = 0; i < m_; ++i, row += dv_ + 1) {
    if (scale == 1.0f) {
      row[dv_] = feature_sums_data_[i];
    } else {
      for (int64_t j = 0; j < dv_; ++j) row[j] *= scale;
      row[dv_] = feature_sums_data_[i] * scale;
    }
  }
  const auto opts = at::TensorOptions().dtype(at::kFloat);
  return {std::move(state_), at::full({1, 1, 1}, max_seen_, opts),
          value_sums_.view({1, 1, -1})};
}

}  // namespace

bool FavorCpuPathApplies(const FeatureContext& context,
                         const HeadGroup& group) {
  return context.traits().exp_of_projection && group.key.device().is_cpu() &&
         group.key.size(0) == 1 &&
         (AllOfType(group, at::kFloat) || RunsInBFloat16(group)) &&
         group.query.stride(2) == 1 && group.key.stride(2) == 1 &&
         group.value.stride(2) == 1 && group.out.stride(2) == 1;
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

namespace {

// What a query pass reads and the float32 buffers of its steps, shared by
// the float32 and the bfloat16 loops.
struct QueryPass {
  QueryPass(const FeatureContext& context, const AttentionOptions& options,
            const HeadGroup& group, const at::Tensor& state, int64_t begin,
            int64_t end);

  const int64_t d, dv, m, chunk;
  // The state (m, dv + 1), read in place: Σφ(k)vᵀ in columns [0, dv),
  // Σφ(k) in column dv (ε folded into both).
  const at::Tensor state;
  const float* const sums;
  std::vector<float> feature_sums;  // column dv, contiguous
  float* const u;
  float* const numerators;
  std::vector<float> half, denominators;
  const float half_scale;
  const at::Tensor query, out;
  const int64_t query_stride, out_stride;
  const cpu::LogitAffine logits;
};

QueryPass::QueryPass(const FeatureContext& context,
                     const AttentionOptions& options, const HeadGroup& group,
                     const at::Tensor& key_state, int64_t begin, int64_t end)
    : d(group.query.size(2)),
      dv(group.value.size(2)),
      m(context.num_features()),
      chunk(CpuChunkTokens(options, end - begin)),
      state(key_state.contiguous()),
      sums(state.data_ptr<float>()),
      feature_sums(m),
      u(Scratch(ScratchSlot::kFeatures, chunk, m)),
      numerators(Scratch(ScratchSlot::kValueRows, chunk, dv)),
      half(chunk),
      denominators(chunk),
      half_scale(0.5f / std::sqrt(static_cast<float>(d))),
      query(group.query[0]),
      out(group.out[0]),
      query_stride(query.stride(0)),
      out_stride(out.stride(0)),
      logits(AffineOf(group)) {
  for (int64_t i = 0; i < m; ++i) feature_sums[i] = sums[i * (dv + 1) + dv];
}

// The bfloat16 query pass: S packed once, then per step the projection
// (GemmBF16), the float32 features and normaliser, the features rounded to
// bfloat16 for φ(q)·S (GemmBF16), and the quotient rounded into the output.
void QueriesBF16(const FeatureContext& context, QueryPass& p,
                 const at::Tensor& state, int64_t begin, int64_t end) {
  cpu::BFloat16Bits* const sums16 =
      ScratchBF16(ScratchSlot::kValuesBF16, cpu::PackedBF16Size(p.m, p.dv));
  cpu::PackBF16(p.m, p.dv, {p.sums, p.dv + 1, 1}, sums16);
  const cpu::BFloat16Bits* const projection = PackedProjection(context);
  cpu::BFloat16Bits* const u16 =
      ScratchBF16(ScratchSlot::kFeaturesBF16, p.chunk * p.m);
  const auto* queries =
      static_cast<const cpu::BFloat16Bits*>(p.query.data_ptr());
  auto* outputs = static_cast<cpu::BFloat16Bits*>(p.out.data_ptr());
  for (int64_t start = begin; start < end; start += p.chunk) {
    const int64_t rows = std::min(end, start + p.chunk) - start;
    const cpu::BFloat16Bits* x = queries + start * p.query_stride;
    cpu::GemmBF16(rows, p.m, p.d, x, p.query_stride, projection, p.u, p.m,
                  /*accumulate=*/false);
    cpu::RowSquaredNormsBF16(x, rows, p.d, p.query_stride, p.half_scale,
                             p.half.data());
    cpu::QueryFeaturesWithDot(p.u, p.half.data(), rows, p.m, context.epsilon(),
                              p.feature_sums.data(), p.denominators.data(),
                              p.logits);
    cpu::ConvertToBF16(rows, p.m, {p.u, p.m, 1}, u16, p.m);
    cpu::GemmBF16(rows, p.dv, p.m, u16, p.m, sums16, p.numerators, p.dv,
                  /*accumulate=*/false);
    cpu::DivideRows(p.numerators, p.denominators.data(), rows, p.dv,
                    p.numerators, p.dv);
    cpu::ConvertToBF16(rows, p.dv, {p.numerators, p.dv, 1},
                       outputs + start * p.out_stride, p.out_stride);
  }
}

}  // namespace

void QueriesFavorCpu(const FeatureContext& context,
                     const AttentionOptions& options, const HeadGroup& group,
                     const at::Tensor& state, int64_t begin, int64_t end) {
  QueryPass p(context, options, group, state, begin, end);
  if (RunsInBFloat16(group)) return QueriesBF16(context, p, state, begin, end);
  const float* const projection =
      context.scaled_projection_t().data_ptr<float>();
  const float* const queries = p.query.data_ptr<float>();
  float* const outputs = p.out.data_ptr<float>();
  // The projection and the state packed once for the pass's steps.
  const bool packed = ProductsOnPackedAvx2();
  const float* const packed_projection =
      packed ? PackedForAvx2(ScratchSlot::kPackedProjectionF32, p.d, p.m,
                             projection, p.m)
             : nullptr;
  const float* const packed_sums =
      packed ? PackedForAvx2(ScratchSlot::kPackedValues, p.m, p.dv, p.sums,
                             p.dv + 1)
             : nullptr;
  for (int64_t start = begin; start < end; start += p.chunk) {
    const int64_t rows = std::min(end, start + p.chunk) - start;
    const float* x = queries + start * p.query_stride;
    if (packed) {
      PackedProduct(rows, p.m, p.d, {x, p.query_stride, 1}, packed_projection,
                    p.u, p.m, /*accumulate=*/false);
    } else {
      MatMul(rows, p.m, p.d, {x, p.query_stride, 1}, projection, p.m, p.u,
             p.m, /*accumulate=*/false);
    }
    cpu::RowSquaredNorms(x, rows, p.d, p.query_stride, p.half_scale,
                         p.half.data());
    cpu::QueryFeaturesWithDot(p.u, p.half.data(), rows, p.m, context.epsilon(),
                              p.feature_sums.data(), p.denominators.data(),
                              p.logits);
    if (packed) {
      PackedProduct(rows, p.dv, p.m, {p.u, p.m, 1}, packed_sums, p.numerators,
                    p.dv, /*accumulate=*/false);
    } else {
      MatMul(rows, p.dv, p.m, {p.u, p.m, 1}, p.sums, p.dv + 1, p.numerators,
             p.dv, /*accumulate=*/false);
    }
    cpu::DivideRows(p.numerators, p.denominators.data(), rows, p.dv,
                    outputs + start * p.out_stride, p.out_stride);
  }
}

}  // namespace favor::attention
