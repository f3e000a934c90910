// The int8 products on AVX-512: the AVX512-VNNI tile kernel (vpdpbusd) and
// the rows' quantiser with 16 lanes (cpu_gemm_int8.h says what they
// compute; cpu_gemm_int8.cc chooses them at run time). Built without FMA
// contraction, as cpu_gemm_int8.cc, so that the epilogue's roundings are
// the portable loop's.
#include <algorithm>
#include <cstring>

#include "server/attention/cpu_gemm_int8.h"
#include "server/common/multiversion.h"  // FAVOR_X86_TARGETS
#include "server/attention/cpu_gemm_int8_internal.h"
#include "server/attention/cpu_tiles.h"

#ifdef FAVOR_X86_TARGETS
#include <immintrin.h>

namespace favor::attention::cpu::int8_internal {

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which its
// own -W(maybe-)uninitialized then reports (a known false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// cpu_gemm_int8.cc's QuantizeRowsAvx2 with 16 lanes: the same operations on
// each value (min and max are exact; vcvtps2dq rounds to nearest even, as
// nearbyint), so the same bytes, scales and zero points. The row's last
// values go through the same masked vectors.
__attribute__((target("avx512f,avx512bw"))) void QuantizeRowsAvx512(
    int64_t rows, int64_t depth, const float* a, int64_t lda, uint8_t* q,
    int64_t q_stride, float* scales, int32_t* zero_points) {
  const auto tail = [depth](int64_t k) {
    return depth - k >= 16 ? __mmask16(0xFFFF)
                           : static_cast<__mmask16>((1u << (depth - k)) - 1);
  };
  for (int64_t i = 0; i < rows; ++i) {
    const float* x = a + i * lda;
    __m512 lo16 = _mm512_setzero_ps(), hi16 = _mm512_setzero_ps();
    for (int64_t k = 0; k < depth; k += 16) {
      // Lanes past the row read as 0, which the range holds anyway.
      const __m512 v = _mm512_maskz_loadu_ps(tail(k), x + k);
      lo16 = _mm512_min_ps(lo16, v);
      hi16 = _mm512_max_ps(hi16, v);
    }
    const RowQuantizer quantizer =
        QuantizerFor(_mm512_reduce_min_ps(lo16), _mm512_reduce_max_ps(hi16));
    uint8_t* out = q + i * q_stride;
    const __m512 inverse = _mm512_set1_ps(quantizer.inverse);
    const __m512i zero_point = _mm512_set1_epi32(quantizer.zero_point);
    const __m512i top = _mm512_set1_epi32(kInt8ActivationMax);
    const __m512i zero = _mm512_setzero_si512();
    const __m512 limit = _mm512_set1_ps(256.0f);
    const __m512 neg_limit = _mm512_set1_ps(-256.0f);
    for (int64_t k = 0; k < depth; k += 16) {
      const __mmask16 m = tail(k);
      const __m512 scaled =
          _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + k), inverse);
      // In range and not NaN (ordered compares), as QuantizeOne.
      const __mmask16 ok = _mm512_cmp_ps_mask(scaled, neg_limit, _CMP_GE_OQ) &
                           _mm512_cmp_ps_mask(scaled, limit, _CMP_LE_OQ);
      __m512i v = _mm512_add_epi32(_mm512_cvtps_epi32(scaled), zero_point);
      v = _mm512_maskz_min_epi32(ok, _mm512_max_epi32(v, zero), top);
      _mm512_mask_cvtepi32_storeu_epi8(out + k, m, v);
    }
    std::fill(out + depth, out + Int8PaddedDepth(depth), uint8_t{0});
    scales[i] = quantizer.scale;
    zero_points[i] = quantizer.zero_point;
  }
}

namespace {

// kRows rows × 16 · kVectors columns of int32 sums in registers (six rows
// of four vectors: 24 of the 32): per group of 4 k, each vector's 16
// columns from two adjacent 8-column panels (two 32-byte loads joined),
// one 4-byte broadcast per row, and one vpdpbusd per (row, vector): 64
// multiply-adds with exact int32 sums, against vpmaddubsw's pairs through
// int16. Then the AVX2 tile's epilogue, 16 lanes at a time, the last
// vector's columns selected by `mask`; the same operations in the same
// order (this file is built without FMA contraction), so the same bits.
template <int kRows, int kVectors>
__attribute__((target("avx512f,avx512bw,avx512vnni"),
               always_inline)) inline void
TileVnni(int64_t groups, const uint8_t* a, int64_t a_stride,
         const int8_t* panel, int64_t panel_stride, const float* row_scales,
         const int32_t* zero_points, const float* column_scales,
         const int32_t* column_sums, float* c, int64_t ldc, __mmask16 mask,
         bool accumulate, const float* bias) {
  __m512i acc[kRows][kVectors];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_setzero_si512();
  }
  for (int64_t g = 0; g < groups; ++g) {
    const int8_t* w = panel + g * kPanelGroupBytes;
    __m512i b[kVectors];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      const int8_t* low = w + 2 * v * panel_stride;
      b[v] = _mm512_inserti64x4(
          _mm512_zextsi256_si512(
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(low))),
          _mm256_loadu_si256(
              reinterpret_cast<const __m256i*>(low + panel_stride)),
          1);
    }
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      int32_t four;
      std::memcpy(&four, a + r * a_stride + g * kGroupBytes, sizeof four);
      const __m512i x = _mm512_set1_epi32(four);
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) {
        // The instruction itself: GCC 12 copies the accumulators through
        // other registers and the stack around the builtin (half speed).
        asm("vpdpbusd %2, %1, %0" : "+v"(acc[r][v]) : "v"(x), "v"(b[v]));
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    const __m512 row_scale = _mm512_set1_ps(row_scales[r]);
    const __m512i zero_point = _mm512_set1_epi32(zero_points[r]);
    float* out = c + r * ldc;
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      const __mmask16 m = v == kVectors - 1 ? mask : __mmask16(0xFFFF);
      const __m512i column_sum =
          _mm512_maskz_loadu_epi32(m, column_sums + 16 * v);
      const __m512i sum = _mm512_sub_epi32(
          acc[r][v], _mm512_mullo_epi32(zero_point, column_sum));
      __m512 y = _mm512_mul_ps(
          _mm512_mul_ps(row_scale,
                        _mm512_maskz_loadu_ps(m, column_scales + 16 * v)),
          _mm512_cvtepi32_ps(sum));
      if (bias != nullptr) {
        y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(m, bias + 16 * v));
      }
      if (accumulate) {
        y = _mm512_add_ps(_mm512_maskz_loadu_ps(m, out + 16 * v), y);
      }
      _mm512_mask_storeu_ps(out + 16 * v, m, y);
    }
  }
}

}  // namespace

__attribute__((target("avx512f,avx512bw,avx512vnni"))) void GemmInt8Vnni(
    int64_t rows, int64_t cols, int64_t depth, const Int8Rows& a,
    const Int8Weight& b, float* c, int64_t ldc, bool accumulate,
    const float* bias) {
  const int64_t groups = Int8PaddedDepth(depth) / kGroupBytes;
  const int64_t panel_stride = groups * kPanelGroupBytes;
  // A vector's second panel may be the one past the last: the packed
  // weight's zero padding (kPaddingPanels), its lanes masked off.
  ForEachPanel<16, 4>(
      cols, [&](int64_t j, int vectors, int lanes) __attribute__((
                target("avx512f,avx512bw,avx512vnni"))) {
        const __mmask16 mask = static_cast<__mmask16>((1u << lanes) - 1);
        const int8_t* panel = b.packed + j / kInt8PanelColumns * panel_stride;
        WithConstant<4>(
            vectors, [&](auto v) __attribute__((
                         target("avx512f,avx512bw,avx512vnni"))) {
              ForEachTile(
                  rows, [&](int64_t i, auto r) __attribute__((
                            target("avx512f,avx512bw,avx512vnni"))) {
                    TileVnni<decltype(r)::value, decltype(v)::value>(
                        groups, a.data + i * a.stride, a.stride, panel,
                        panel_stride, a.scales + i, a.zero_points + i,
                        b.scales + j, b.column_sums + j, c + i * ldc + j, ldc,
                        mask, accumulate, bias != nullptr ? bias + j : nullptr);
                  });
            });
      });
}
#pragma GCC diagnostic pop

}  // namespace favor::attention::cpu::int8_internal

#endif  // FAVOR_X86_TARGETS
