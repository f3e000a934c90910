#include "server/attention/favor_cpu_path.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "server/attention/cpu_gemm.h"
#include "server/attention/cpu_gemm_bf16.h"
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
// The bfloat16 path adds the bfloat16 operands of its products and, under
// a mask, the value rows with padding zeroed.
enum class ScratchSlot {
  kFeatures = 0,
  kValueRows = 1,
  kKeptValuesBF16 = 2,
  kFeaturesBF16 = 3,
  kValuesBF16 = 4,
  kPackedProjection = 5,
  kPackedProjectionF32 = 6,
  kPackedValues = 7,
  kCount = 8
};
void* ScratchBytes(ScratchSlot slot, int64_t elements, at::ScalarType type) {
  // Tensors for LibTorch's allocator's 64-byte alignment: rows that start
  // mid-cache-line would slow every vector load of cpu::Gemm.
  thread_local at::Tensor buffers[static_cast<int>(ScratchSlot::kCount)];
  at::Tensor& buffer = buffers[static_cast<int>(slot)];
  if (!buffer.defined() || buffer.numel() < elements ||
      buffer.scalar_type() != type) {
    buffer = at::empty({elements}, type);
  }
  return buffer.data_ptr();
}
float* Scratch(ScratchSlot slot, int64_t rows, int64_t cols) {
  return static_cast<float*>(ScratchBytes(slot, rows * cols, at::kFloat));
}
cpu::BFloat16Bits* ScratchBF16(ScratchSlot slot, int64_t elements) {
  return static_cast<cpu::BFloat16Bits*>(
      ScratchBytes(slot, elements, at::kBFloat16));
}

// Whether the path's products run on cpu::Gemm: with its AVX-512 tiles,
// reading every operand in place.
bool ProductsOnGemm() {
  return cpu::ActiveGemmKernel() == cpu::GemmKernel::kAvx512;
}

// Whether they run on its AVX2 tiles with the right-hand operand packed
// (cpu::PackB): the projection and the state once per pass, each step's
// values once per step. Read in place, a tile's pieces of the values (rows
// of the fused query | key | value product, 3 KiB apart) and of the
// projection (1 KiB) ran the products at 0.89-0.91 of the BLAS's rate on
// AMD's Zen 3 (docs/performance.md), so unpacked AVX2 kept the BLAS.
bool ProductsOnPackedAvx2() {
  return cpu::ActiveGemmKernel() == cpu::GemmKernel::kAvx2;
}

// b (depth × cols, row stride ldb) packed for the AVX2 tiles into the
// thread's `slot`.
const float* PackedForAvx2(ScratchSlot slot, int64_t depth, int64_t cols,
                           const float* b, int64_t ldb) {
  constexpr cpu::GemmKernel kKernel = cpu::GemmKernel::kAvx2;
  float* packed = static_cast<float*>(ScratchBytes(
      slot, cpu::PackedBSize(depth, cols, kKernel), at::kFloat));
  cpu::PackB(depth, cols, b, ldb, kKernel, packed);
  return packed;
}

// c = a · b with b packed by PackedForAvx2.
void PackedProduct(int64_t rows, int64_t cols, int64_t depth, cpu::MatrixView a,
                   const float* packed, float* c, int64_t ldc,
                   bool accumulate) {
  cpu::GemmPackedB(rows, cols, depth, a, packed, cpu::GemmKernel::kAvx2, c,
                   ldc, accumulate);
}

// c (+)= a · b for the CPU path, on raw row-major operands (b and c with
// unit column stride): cpu::Gemm where ProductsOnGemm(), else the BLAS. Raw
// pointers, not tensors: the loops around it take 64-token steps, where the
// cost of creating tensor views would show.
void MatMul(int64_t rows, int64_t cols, int64_t depth, cpu::MatrixView a,
            const float* b, int64_t ldb, float* c, int64_t ldc,
            bool accumulate) {
  if (ProductsOnGemm()) {
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
  constexpr int64_t kPackedAvx2BlockTokens = 128;
  int64_t chunk = options.chunk_tokens;
  if (ProductsOnGemm()) chunk = std::min(chunk, kGemmBlockTokens);
  if (ProductsOnPackedAvx2()) chunk = std::min(chunk, kPackedAvx2BlockTokens);
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

// bfloat16 value rows (row stride `stride`), or, under a mask, their copy
// in `scratch` (rows × dv) with padding rows zeroed: a padding row's
// feature is 0, but 0 · NaN would not be.
const cpu::BFloat16Bits* KeptValueBits(const cpu::BFloat16Bits* values,
                                       int64_t stride, int64_t rows, int64_t dv,
                                       const uint8_t* keep,
                                       cpu::BFloat16Bits* scratch,
                                       int64_t* kept_stride) {
  *kept_stride = stride;
  if (keep == nullptr) return values;
  for (int64_t i = 0; i < rows; ++i) {
    const cpu::BFloat16Bits* row = values + i * stride;
    if (keep[i]) {
      std::copy(row, row + dv, scratch + i * dv);
    } else {
      std::fill(scratch + i * dv, scratch + (i + 1) * dv, 0);
    }
  }
  *kept_stride = dv;
  return scratch;
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
  // Σφ̃(k)vᵀ, Σφ̃(k) and Σ[v | 1], and raw pointers into them and the inputs,
  // taken once: the steps are short enough for tensor accessors to show.
  at::Tensor sums_, feature_sums_, value_sums_;
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
      sums_(at::zeros({m_, dv_}, at::kFloat)),
      feature_sums_(at::zeros({m_}, at::kFloat)),
      value_sums_(at::zeros({dv_ + 1}, at::kFloat)),
      sums_data_(sums_.data_ptr<float>()),
      feature_sums_data_(feature_sums_.data_ptr<float>()),
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
                    sums_data_, dv_, /*accumulate=*/true);
    } else {
      MatMul(m_, dv_, rows, {features_, 1, m_}, v.data, v.row_stride,
             sums_data_, dv_, /*accumulate=*/true);
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
                       dv_, /*accumulate=*/true);
}

void KeyAccumulator::Step(int64_t start, int64_t rows) {
  const uint8_t* keep_rows = keep_ != nullptr ? keep_ + start : nullptr;
  ProjectKeys(start, rows);
  const float shift_before = shift_;
  max_seen_ =
      std::max(max_seen_, cpu::ExpWithRunningShift(
                              features_, half_.data(), keep_rows, &shift_, rows,
                              m_, feature_sums_data_, max_seen_, logits_));
  if (shift_ != shift_before) {
    const float scale = std::exp(shift_before - shift_);
    for (int64_t i = 0; i < m_ * dv_; ++i) sums_data_[i] *= scale;
  }
  AddValues(start, rows, keep_rows);
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
