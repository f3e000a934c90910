#include "server/attention/cpu_kernels.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "server/attention/cpu_exp.h"
#include "server/attention/cpu_features.h"
#include "server/attention/cpu_rows_avx2.h"
#include "server/common/multiversion.h"

#ifdef FAVOR_X86_TARGETS
#include <immintrin.h>
#endif

namespace favor::attention::cpu {
namespace {

// Reductions in explicit 16-float vectors (GCC vector extensions, lowered
// to whatever width the clone's target has): the compiler may not
// reassociate float sums and maxima on its own, so plain loops stay scalar.
using Vec16 = float __attribute__((vector_size(64)));
constexpr int64_t kLanes = 16;

inline Vec16 Load(const float* p) {
  Vec16 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

inline void Store(float* p, const Vec16& v) { std::memcpy(p, &v, sizeof(v)); }

// 16 bfloat16 (raw bits) widened exactly: each is a float32's upper half.
using Bits16 = uint16_t __attribute__((vector_size(32)));
using Bits32 = uint32_t __attribute__((vector_size(64)));
inline Vec16 LoadBF16(const uint16_t* p) {
  Bits16 half;
  std::memcpy(&half, p, sizeof(half));
  const Bits32 bits = __builtin_convertvector(half, Bits32) << 16;
  Vec16 v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}
inline float WidenBF16(uint16_t x) {
  const uint32_t bits = static_cast<uint32_t>(x) << 16;
  float v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

inline float RowMax(const float* row, int64_t cols) {
  float best = -std::numeric_limits<float>::infinity();
  int64_t c = 0;
  if (cols >= kLanes) {
    Vec16 lanes = Load(row);
    for (c = kLanes; c + kLanes <= cols; c += kLanes) {
      const Vec16 v = Load(row + c);
      lanes = lanes > v ? lanes : v;
    }
    for (int64_t l = 0; l < kLanes; ++l) best = std::max(best, lanes[l]);
  }
  for (; c < cols; ++c) best = std::max(best, row[c]);
  return best;
}

// Maps a row of logits in place (LogitAffine) and returns their max; the
// plain max for the identity map.
inline float MapRowAndMax(float* row, int64_t cols, LogitAffine logits) {
  if (logits.bias == nullptr) return RowMax(row, cols);
  float best = -std::numeric_limits<float>::infinity();
  int64_t c = 0;
  if (cols >= kLanes) {
    Vec16 lanes = Load(row) * logits.scale + Load(logits.bias);
    Store(row, lanes);
    for (c = kLanes; c + kLanes <= cols; c += kLanes) {
      const Vec16 v = Load(row + c) * logits.scale + Load(logits.bias + c);
      Store(row + c, v);
      lanes = lanes > v ? lanes : v;
    }
    for (int64_t l = 0; l < kLanes; ++l) best = std::max(best, lanes[l]);
  }
  for (; c < cols; ++c) {
    row[c] = row[c] * logits.scale + logits.bias[c];
    best = std::max(best, row[c]);
  }
  return best;
}

// Σ a[c]·b[c].
inline float RowDot(const float* a, const float* b, int64_t cols) {
  Vec16 lanes = {};
  int64_t c = 0;
  for (; c + kLanes <= cols; c += kLanes) lanes += Load(a + c) * Load(b + c);
  float sum = 0;
  for (; c < cols; ++c) sum += a[c] * b[c];
  for (int64_t l = 0; l < kLanes; ++l) sum += lanes[l];
  return sum;
}

// The sum of v's lanes, halving the vector (a chain of four additions
// rather than RowDot's sixteen: rows of 64 are short enough for the chain
// to show).
inline float LaneSum(Vec16 v) {
  using Vec8 = float __attribute__((vector_size(32)));
  using Vec4 = float __attribute__((vector_size(16)));
  const Vec8 eight =
      __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
      __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  const Vec4 four = __builtin_shufflevector(eight, eight, 0, 1, 2, 3) +
                    __builtin_shufflevector(eight, eight, 4, 5, 6, 7);
  return (four[0] + four[2]) + (four[1] + four[3]);
}

// Σ x[c]² of a bfloat16 row.
inline float RowSquaresBF16(const uint16_t* x, int64_t cols) {
  Vec16 lanes = {};
  int64_t c = 0;
  for (; c + kLanes <= cols; c += kLanes) {
    const Vec16 v = LoadBF16(x + c);
    lanes += v * v;
  }
  float sum = 0;
  for (; c < cols; ++c) sum += WidenBF16(x[c]) * WidenBF16(x[c]);
  return sum + LaneSum(lanes);
}

// row[c] = exp(row[c] − offset) + epsilon for c < cols, and when
// column_sums is not null, column_sums[c] += the exp (before epsilon). The
// portable loop; RowExpAvx512 below is the same with AVX-512 instructions.
FAVOR_MULTIVERSION
void RowExpPortable(float* row, int64_t cols, float offset, float epsilon,
                    float* column_sums) {
  if (column_sums != nullptr) {
    for (int64_t c = 0; c < cols; ++c) {
      row[c] = FastExpBounded(row[c] - offset);
      column_sums[c] += row[c];
    }
    return;
  }
  for (int64_t c = 0; c < cols; ++c) {
    row[c] = FastExpBounded(row[c] - offset) + epsilon;
  }
}

#ifdef FAVOR_X86_TARGETS
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_ps(), which its
// own -Wmaybe-uninitialized then reports (a known false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// exp(x) for x ≤ 88 with AVX-512's own instructions: x = (k + r / ln2) ln2
// with k a multiple of 1/16 (vrndscaleps keeps four fraction bits) and
// |r| ≤ ln2/32, r computed in two steps (Cody-Waite: k · kLn2Hi is exact);
// 2^(k mod 1) from a 16-entry table held in one register (vpermps), e^r by
// a cubic (truncation error below 1e-8), 2^⌊k⌋ by vscalefps. Relative
// error below 3e-7, with three quarters of the instructions of a polynomial
// over |r| ≤ ln2/2. Arguments below −87 give e^-87 ≈ 1.6e-38, as
// FastExpBounded: no denormals, which would slow the products that follow.
__attribute__((target("avx512f"))) inline __m512 Exp16(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
  const __m512 k = _mm512_roundscale_ps(
      _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
      (4 << 4) | _MM_FROUND_TO_NEAREST_INT);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f), r);
  // 2^(j/16), j = 0..15, correctly rounded.
  const __m512 table = _mm512_setr_ps(
      1.0f, 1.0442737824274138f, 1.0905077326652577f, 1.1387886347566916f,
      1.189207115002721f, 1.241857812073484f, 1.2968395546510096f,
      1.3542555469368927f, 1.4142135623730951f, 1.4768261459394993f,
      1.5422108254079407f, 1.6104903319492543f, 1.681792830507429f,
      1.7562521603732995f, 1.8340080864093424f, 1.9152065613971474f);
  const __m512 fraction = _mm512_permutexvar_ps(
      _mm512_cvtps_epi32(_mm512_mul_ps(k, _mm512_set1_ps(16.0f))), table);
  __m512 p = _mm512_set1_ps(1.0f / 6.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(_mm512_mul_ps(p, fraction), k);
}

__attribute__((target("avx512f"))) void RowExpAvx512(float* row, int64_t cols,
                                                     float offset,
                                                     float epsilon,
                                                     float* column_sums) {
  const __m512 shift = _mm512_set1_ps(offset);
  const __m512 eps = _mm512_set1_ps(epsilon);
  for (int64_t c = 0; c < cols; c += 16) {
    const __mmask16 mask = cols - c >= 16
                               ? __mmask16(0xFFFF)
                               : static_cast<__mmask16>((1u << (cols - c)) - 1);
    const __m512 e =
        Exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, row + c), shift));
    if (column_sums != nullptr) {
      _mm512_mask_storeu_ps(row + c, mask, e);
      _mm512_mask_storeu_ps(
          column_sums + c, mask,
          _mm512_add_ps(_mm512_maskz_loadu_ps(mask, column_sums + c), e));
    } else {
      _mm512_mask_storeu_ps(row + c, mask, _mm512_add_ps(e, eps));
    }
  }
}
#pragma GCC diagnostic pop
#endif

using RowExpFn = void (*)(float*, int64_t, float, float, float*);

// The best RowExp for this CPU, chosen once.
RowExpFn RowExp() {
  static const RowExpFn fn = [] {
#ifdef FAVOR_X86_TARGETS
    const CpuFeatures cpu = DetectedCpuFeatures();
    if (cpu.avx512f) return &RowExpAvx512;
    if (cpu.avx2 && cpu.fma) return &RowExpAvx2;
#endif
    return &RowExpPortable;
  }();
  return fn;
}

}  // namespace

FAVOR_MULTIVERSION
void Exp(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = FastExp(x[i]);
}

FAVOR_MULTIVERSION
void RowSquaredNorms(const float* x, int64_t rows, int64_t cols, int64_t stride,
                     float scale, float* h) {
#ifdef FAVOR_X86_TARGETS
  if (RowsOnAvx2()) {
    for (int64_t i = 0; i < rows; ++i) {
      const float* row = x + i * stride;
      h[i] = scale * RowDotAvx2(row, row, cols);
    }
    return;
  }
#endif
  for (int64_t i = 0; i < rows; ++i) {
    const float* row = x + i * stride;
    h[i] = scale * RowDot(row, row, cols);
  }
}

FAVOR_MULTIVERSION
void RowSquaredNormsBF16(const uint16_t* x, int64_t rows, int64_t cols,
                         int64_t stride, float scale, float* h) {
  for (int64_t i = 0; i < rows; ++i) {
    h[i] = scale * RowSquaresBF16(x + i * stride, cols);
  }
}

FAVOR_MULTIVERSION
float ExpWithRunningShift(float* u, const float* h, const uint8_t* keep,
                          float* shift, int64_t rows, int64_t cols,
                          float* column_sums, float empty, LogitAffine logits) {
  float best = -std::numeric_limits<float>::infinity();
  bool any = false;
  for (int64_t i = 0; i < rows; ++i) {
    float* row = u + i * cols;
    if (keep != nullptr && keep[i] == 0) {
      std::fill(row, row + cols, 0.0f);
      continue;
    }
#ifdef FAVOR_X86_TARGETS
    const float row_max = RowsOnAvx2() ? MapRowAndMaxAvx2(row, cols, logits)
                                       : MapRowAndMax(row, cols, logits);
#else
    const float row_max = MapRowAndMax(row, cols, logits);
#endif
    best = std::max(best, row_max);
    any = true;
    if (row_max > *shift + kMaxShiftGap) {
      const float scale = FastExp(*shift - row_max);
      for (int64_t c = 0; c < cols; ++c) column_sums[c] *= scale;
      for (int64_t j = 0; j < i * cols; ++j) u[j] *= scale;
      *shift = row_max;
    }
    RowExp()(row, cols, h[i] + *shift, 0.0f, column_sums);
  }
  return any ? best : empty;
}

FAVOR_MULTIVERSION
void QueryFeaturesWithDot(float* u, const float* h, int64_t rows, int64_t cols,
                          float epsilon, const float* z, float* dot,
                          LogitAffine logits) {
#ifdef FAVOR_X86_TARGETS
  if (RowsOnAvx2()) {
    for (int64_t i = 0; i < rows; ++i) {
      float* row = u + i * cols;
      const float offset = MapRowAndMaxAvx2(row, cols, logits) + h[i];
      dot[i] = RowExpDotAvx2(row, cols, offset, epsilon, z);
    }
    return;
  }
#endif
  for (int64_t i = 0; i < rows; ++i) {
    float* row = u + i * cols;
    const float offset = MapRowAndMax(row, cols, logits) + h[i];
    RowExp()(row, cols, offset, epsilon, nullptr);
    dot[i] = RowDot(row, z, cols);
  }
}

FAVOR_MULTIVERSION
void AddKeptRows(const float* x, int64_t rows, int64_t cols, int64_t stride,
                 const uint8_t* keep, float* sums) {
  for (int64_t i = 0; i < rows; ++i) {
    if (keep != nullptr && keep[i] == 0) continue;
    const float* row = x + i * stride;
    for (int64_t c = 0; c < cols; ++c) sums[c] += row[c];
    sums[cols] += 1.0f;
  }
}

FAVOR_MULTIVERSION
void AddKeptRowsBF16(const uint16_t* x, int64_t rows, int64_t cols,
                     int64_t stride, const uint8_t* keep, float* sums) {
  // Sixteen columns at a time down all rows, in registers; then the total
  // is added to sums once.
  int64_t c = 0;
  for (; c + kLanes <= cols; c += kLanes) {
    Vec16 total = {};
    for (int64_t i = 0; i < rows; ++i) {
      if (keep == nullptr || keep[i] != 0) {
        total += LoadBF16(x + i * stride + c);
      }
    }
    Store(sums + c, Load(sums + c) + total);
  }
  for (; c < cols; ++c) {
    float total = 0;
    for (int64_t i = 0; i < rows; ++i) {
      if (keep == nullptr || keep[i] != 0)
        total += WidenBF16(x[i * stride + c]);
    }
    sums[c] += total;
  }
  for (int64_t i = 0; i < rows; ++i) {
    if (keep == nullptr || keep[i] != 0) sums[cols] += 1.0f;
  }
}

FAVOR_MULTIVERSION
void AddKeptMoments(const float* x, int64_t rows, int64_t cols, int64_t stride,
                    const uint8_t* keep, double* sums,
                    double* sum_squared_norms, int64_t* count) {
  double squares = 0;
  int64_t kept = 0;
  for (int64_t i = 0; i < rows; ++i) {
    if (keep != nullptr && keep[i] == 0) continue;
    const float* row = x + i * stride;
    squares += RowDot(row, row, cols);
    for (int64_t c = 0; c < cols; ++c) sums[c] += row[c];
    ++kept;
  }
  *sum_squared_norms += squares;
  *count += kept;
}

FAVOR_MULTIVERSION
void DivideRows(const float* num, const float* den, int64_t rows, int64_t cols,
                float* out, int64_t out_stride) {
  for (int64_t i = 0; i < rows; ++i) {
    const float inverse = den[i] != 0.0f ? 1.0f / den[i] : 0.0f;
    const float* src = num + i * cols;
    float* dst = out + i * out_stride;
    for (int64_t c = 0; c < cols; ++c) dst[c] = src[c] * inverse;
  }
}

namespace {

// The portable SoftmaxColumnsStep: whole-block passes, vectorised by each
// target clone.
FAVOR_MULTIVERSION
void SoftmaxColumnsStepPortable(float* scores, int64_t rows, int64_t cols,
                                float* column_max, float* column_sum,
                                float* correction, float* shift) {
  constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
  // correction holds the old maxima until the new ones are known.
  for (int64_t c = 0; c < cols; ++c) correction[c] = column_max[c];
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = scores + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      column_max[c] = row[c] > column_max[c] ? row[c] : column_max[c];
    }
  }
  for (int64_t c = 0; c < cols; ++c) {
    shift[c] = column_max[c] == kMinusInf ? 0.0f : column_max[c];
    correction[c] = FastExp(correction[c] - shift[c]);
    column_sum[c] *= correction[c];
  }
  for (int64_t r = 0; r < rows; ++r) {
    float* row = scores + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      row[c] = FastExp(row[c] - shift[c]);
      column_sum[c] += row[c];
    }
  }
}

#ifdef FAVOR_X86_TARGETS
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// Exp16, 0 below −87.34 (−∞ included) and NaN for NaN, as FastExp: scores
// that overflowed float32 (∞ − ∞) must stay NaN for the caller to refuse
// them, where Exp16's clamp alone would make them e^-87.
__attribute__((target("avx512f"))) inline __m512 Exp16OrZero(__m512 x) {
  const __mmask16 below =
      _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3365447505531f), _CMP_LT_OQ);
  const __m512 e = _mm512_mask_mov_ps(Exp16(x), below, _mm512_setzero_ps());
  return _mm512_mask_mov_ps(e, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

// The same step with AVX-512's exp, sixteen queries at a time down the
// block: the max pass brings the strip into the L1 cache for the exp pass.
__attribute__((target("avx512f"))) void SoftmaxColumnsStepAvx512(
    float* scores, int64_t rows, int64_t cols, float* column_max,
    float* column_sum, float* correction, float* /*shift*/) {
  const __m512 minus_inf =
      _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t c = 0; c < cols; c += 16) {
    const __mmask16 mask = cols - c >= 16
                               ? __mmask16(0xFFFF)
                               : static_cast<__mmask16>((1u << (cols - c)) - 1);
    const __m512 old = _mm512_maskz_loadu_ps(mask, column_max + c);
    __m512 top = old;
    for (int64_t r = 0; r < rows; ++r) {
      top = _mm512_max_ps(
          top, _mm512_mask_loadu_ps(minus_inf, mask, scores + r * cols + c));
    }
    _mm512_mask_storeu_ps(column_max + c, mask, top);
    const __m512 shift = _mm512_mask_mov_ps(
        top, _mm512_cmp_ps_mask(top, minus_inf, _CMP_EQ_OQ),
        _mm512_setzero_ps());
    const __m512 corr = Exp16OrZero(_mm512_sub_ps(old, shift));
    _mm512_mask_storeu_ps(correction + c, mask, corr);
    __m512 sum =
        _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, column_sum + c), corr);
    for (int64_t r = 0; r < rows; ++r) {
      float* at = scores + r * cols + c;
      const __m512 e = Exp16OrZero(
          _mm512_sub_ps(_mm512_maskz_loadu_ps(mask, at), shift));
      _mm512_mask_storeu_ps(at, mask, e);
      sum = _mm512_add_ps(sum, e);
    }
    _mm512_mask_storeu_ps(column_sum + c, mask, sum);
  }
}
#pragma GCC diagnostic pop
#endif

using SoftmaxColumnsStepFn = void (*)(float*, int64_t, int64_t, float*,
                                      float*, float*, float*);

SoftmaxColumnsStepFn SoftmaxColumnsStepKernel() {
  static const SoftmaxColumnsStepFn fn = [] {
#ifdef FAVOR_X86_TARGETS
    if (DetectedCpuFeatures().avx512f) return &SoftmaxColumnsStepAvx512;
#endif
    return &SoftmaxColumnsStepPortable;
  }();
  return fn;
}

}  // namespace

void SoftmaxColumnsStep(float* scores, int64_t rows, int64_t cols,
                        float* column_max, float* column_sum,
                        float* correction, float* shift) {
  SoftmaxColumnsStepKernel()(scores, rows, cols, column_max, column_sum,
                             correction, shift);
}

}  // namespace favor::attention::cpu
