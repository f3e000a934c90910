#include "server/attention/cpu_rows_avx2.h"

#ifdef FAVOR_X86_TARGETS

#include <immintrin.h>

#include <algorithm>
#include <limits>

#include "server/attention/cpu_exp.h"
#include "server/attention/cpu_features.h"

namespace favor::attention::cpu {
namespace {

// exp(x) for x ≤ 88 with AVX2 and FMA, as cpu_kernels.cc's AVX-512 Exp16
// with eight lanes: k a multiple of 1/8 (the table 2^(j/8) fits one
// register for vpermps), so |r| ≤ ln2/16 and e^r takes a quartic
// (truncation error below 2e-9); 2^⌊k⌋ built in the exponent bits (AVX2 has
// no vscalefps). Relative error below 3e-7; arguments below −87 give about
// 1.6e-38, as FastExpBounded. GCC leaves cpu_kernels.cc's portable loop
// scalar (its column sums may alias the row): on AMD's Zen 3 it took a
// sixth of a 512-token Embed (docs/performance.md).
__attribute__((target("avx2,fma"), always_inline)) inline __m256 Exp8(
    __m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
  // k · 8, an integer: j = k · 8, n = ⌊j / 8⌋, j mod 8 indexes the table.
  const __m256 k8 = _mm256_round_ps(
      _mm256_mul_ps(x, _mm256_set1_ps(8.0f * 1.44269504088896341f)),
      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // r = x − k · ln2 in two steps: k8 · (ln2_hi / 8) is exact.
  __m256 r = _mm256_fnmadd_ps(k8, _mm256_set1_ps(0.693359375f / 8), x);
  r = _mm256_fnmadd_ps(k8, _mm256_set1_ps(-2.12194440e-4f / 8), r);
  const __m256i j = _mm256_cvtps_epi32(k8);
  // 2^(i/8), i = 0..7, correctly rounded.
  const __m256 table = _mm256_setr_ps(1.0f, 1.0905077326652577f,
                                      1.189207115002721f, 1.2968395546510096f,
                                      1.4142135623730951f, 1.5422108254079407f,
                                      1.681792830507429f, 1.8340080864093424f);
  const __m256 fraction = _mm256_permutevar8x32_ps(table, j);  // j mod 8
  const __m256i n = _mm256_srai_epi32(j, 3);                   // ⌊j / 8⌋
  const __m256 two_n = _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
  __m256 p = _mm256_set1_ps(1.0f / 24.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  return _mm256_mul_ps(_mm256_mul_ps(p, fraction), two_n);
}

// The row loops below with AVX2 intrinsics, for CPUs whose widest kernels
// are AVX2's. GCC lowers the 16-float vectors of RowMax and RowDot to pairs
// of 256-bit registers that it spills to the stack on every step, and their
// lane reductions to scalar loops: on AMD's Zen 3 the query features took
// 6% and the squared norms 2% of a 512-token Embed on the int8 path, more
// than the exp itself (docs/performance.md). Eight-lane accumulators, two
// of them to overlap the additions' latency; the last columns scalar.
__attribute__((target("avx2,fma"), always_inline)) inline float HorizontalMax(
    __m256 v) {
  __m128 four =
      _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  four = _mm_max_ps(four, _mm_movehl_ps(four, four));
  four = _mm_max_ss(four, _mm_shuffle_ps(four, four, 1));
  return _mm_cvtss_f32(four);
}

__attribute__((target("avx2,fma"), always_inline)) inline float HorizontalSum(
    __m256 v) {
  __m128 four =
      _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  four = _mm_add_ps(four, _mm_movehl_ps(four, four));
  four = _mm_add_ss(four, _mm_shuffle_ps(four, four, 1));
  return _mm_cvtss_f32(four);
}

}  // namespace

__attribute__((target("avx2,fma"))) void RowExpAvx2(float* row, int64_t cols,
                                                    float offset, float epsilon,
                                                    float* column_sums) {
  const __m256 shift = _mm256_set1_ps(offset);
  const __m256 eps = _mm256_set1_ps(epsilon);
  int64_t c = 0;
  for (; c + 8 <= cols; c += 8) {
    const __m256 e = Exp8(_mm256_sub_ps(_mm256_loadu_ps(row + c), shift));
    if (column_sums != nullptr) {
      _mm256_storeu_ps(row + c, e);
      _mm256_storeu_ps(column_sums + c,
                       _mm256_add_ps(_mm256_loadu_ps(column_sums + c), e));
    } else {
      _mm256_storeu_ps(row + c, _mm256_add_ps(e, eps));
    }
  }
  // The last columns (m is a multiple of 8 in practice) as the portable
  // loop does them.
  for (; c < cols; ++c) {
    const float e = FastExpBounded(row[c] - offset);
    if (column_sums != nullptr) {
      row[c] = e;
      column_sums[c] += e;
    } else {
      row[c] = e + epsilon;
    }
  }
}

// MapRowAndMax: the row mapped in place by `logits` (when it has a bias)
// and its max.
__attribute__((target("avx2,fma"))) float MapRowAndMaxAvx2(float* row,
                                                           int64_t cols,
                                                           LogitAffine logits) {
  const bool mapped = logits.bias != nullptr;
  const __m256 scale = _mm256_set1_ps(logits.scale);
  __m256 best0 = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 best1 = best0;
  int64_t c = 0;
  for (; c + 16 <= cols; c += 16) {
    __m256 a = _mm256_loadu_ps(row + c);
    __m256 b = _mm256_loadu_ps(row + c + 8);
    if (mapped) {
      a = _mm256_fmadd_ps(a, scale, _mm256_loadu_ps(logits.bias + c));
      b = _mm256_fmadd_ps(b, scale, _mm256_loadu_ps(logits.bias + c + 8));
      _mm256_storeu_ps(row + c, a);
      _mm256_storeu_ps(row + c + 8, b);
    }
    best0 = _mm256_max_ps(best0, a);
    best1 = _mm256_max_ps(best1, b);
  }
  float best = HorizontalMax(_mm256_max_ps(best0, best1));
  for (; c < cols; ++c) {
    if (mapped) row[c] = row[c] * logits.scale + logits.bias[c];
    best = std::max(best, row[c]);
  }
  return best;
}

// Σ a[c]·b[c].
__attribute__((target("avx2,fma"))) float RowDotAvx2(const float* a,
                                                     const float* b,
                                                     int64_t cols) {
  __m256 sum0 = _mm256_setzero_ps(), sum1 = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + 16 <= cols; c += 16) {
    sum0 =
        _mm256_fmadd_ps(_mm256_loadu_ps(a + c), _mm256_loadu_ps(b + c), sum0);
    sum1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + c + 8),
                           _mm256_loadu_ps(b + c + 8), sum1);
  }
  float sum = HorizontalSum(_mm256_add_ps(sum0, sum1));
  for (; c < cols; ++c) sum += a[c] * b[c];
  return sum;
}

// RowExpAvx2 without column sums, fused with the dot product that follows
// it: row[c] = exp(row[c] − offset) + epsilon, and returns Σ row[c]·z[c].
__attribute__((target("avx2,fma"))) float RowExpDotAvx2(
    float* row, int64_t cols, float offset, float epsilon, const float* z) {
  const __m256 shift = _mm256_set1_ps(offset);
  const __m256 eps = _mm256_set1_ps(epsilon);
  __m256 sum0 = _mm256_setzero_ps(), sum1 = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + 16 <= cols; c += 16) {
    const __m256 a = _mm256_add_ps(
        Exp8(_mm256_sub_ps(_mm256_loadu_ps(row + c), shift)), eps);
    const __m256 b = _mm256_add_ps(
        Exp8(_mm256_sub_ps(_mm256_loadu_ps(row + c + 8), shift)), eps);
    _mm256_storeu_ps(row + c, a);
    _mm256_storeu_ps(row + c + 8, b);
    sum0 = _mm256_fmadd_ps(a, _mm256_loadu_ps(z + c), sum0);
    sum1 = _mm256_fmadd_ps(b, _mm256_loadu_ps(z + c + 8), sum1);
  }
  float sum = HorizontalSum(_mm256_add_ps(sum0, sum1));
  for (; c < cols; ++c) {
    row[c] = FastExpBounded(row[c] - offset) + epsilon;
    sum += row[c] * z[c];
  }
  return sum;
}

// Whether the row loops take their AVX2 versions: AVX2 and FMA are the
// widest this CPU has (within FAVOR_CPU_ISA). AVX-512 keeps the 16-float
// vectors, which GCC lowers well there.
bool RowsOnAvx2() {
  static const bool avx2 = [] {
    const CpuFeatures cpu = DetectedCpuFeatures();
    return !cpu.avx512f && cpu.avx2 && cpu.fma;
  }();
  return avx2;
}

}  // namespace favor::attention::cpu

#endif  // FAVOR_X86_TARGETS
