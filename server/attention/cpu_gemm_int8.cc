#include "server/attention/cpu_gemm_int8.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "server/attention/cpu_features.h"
#include "server/attention/cpu_gemm.h"
#include "server/attention/cpu_gemm_int8_internal.h"
#include "server/attention/cpu_tiles.h"
#include "server/common/multiversion.h"

#ifdef FAVOR_X86_TARGETS
#include <immintrin.h>
#endif

namespace favor::attention::cpu {

using int8_internal::kGroupBytes;
using int8_internal::kPanelGroupBytes;
using int8_internal::QuantizerFor;
using int8_internal::RowQuantizer;

namespace {

constexpr int kTileRowsInt8 = 4;
// The AVX2 tile's columns: three panels, one 8-lane vector each.
constexpr int64_t kTileColumns = 3 * kInt8PanelColumns;
// Zero panels after the last, so that a tile may always read three.
constexpr int64_t kPaddingPanels = 2;

// The epilogue, one output: (sx · sw) · float(sum − zx · Σqw), then + bias,
// then c + that. AVX2 does the same operations in the same order (no fused
// multiply-add: its functions are built without FMA), so the same bits.
inline float Dequantize(int32_t sum, int32_t zero_point, int32_t column_sum,
                        float row_scale, float column_scale) {
  return (row_scale * column_scale) *
         static_cast<float>(sum - zero_point * column_sum);
}

inline uint8_t QuantizeOne(float x, const RowQuantizer& q) {
  const float scaled = x * q.inverse;
  // NaN compares false both ways: it quantises to 0 (documented).
  if (!(scaled >= -256.0f && scaled <= 256.0f)) return 0;
  const int32_t v = static_cast<int32_t>(std::nearbyint(scaled)) + q.zero_point;
  return static_cast<uint8_t>(std::clamp<int32_t>(v, 0, kInt8ActivationMax));
}

void QuantizeRowsPortable(int64_t rows, int64_t depth, const float* a,
                          int64_t lda, uint8_t* q, int64_t q_stride,
                          float* scales, int32_t* zero_points) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* x = a + i * lda;
    float lo = 0, hi = 0;
    for (int64_t k = 0; k < depth; ++k) {
      lo = std::min(lo, x[k]);
      hi = std::max(hi, x[k]);
    }
    const RowQuantizer quantizer = QuantizerFor(lo, hi);
    uint8_t* out = q + i * q_stride;
    for (int64_t k = 0; k < depth; ++k) out[k] = QuantizeOne(x[k], quantizer);
    std::fill(out + depth, out + Int8PaddedDepth(depth), uint8_t{0});
    scales[i] = quantizer.scale;
    zero_points[i] = quantizer.zero_point;
  }
}

// Plain loops over the packed weight: the same int32 sums as the tiles.
void GemmInt8Portable(int64_t rows, int64_t cols, int64_t depth,
                      const Int8Rows& a, const Int8Weight& b, float* c,
                      int64_t ldc, bool accumulate, const float* bias) {
  const int64_t groups = Int8PaddedDepth(depth) / kGroupBytes;
  for (int64_t i = 0; i < rows; ++i) {
    const uint8_t* x = a.data + i * a.stride;
    for (int64_t j = 0; j < cols; ++j) {
      const int8_t* panel =
          b.packed + j / kInt8PanelColumns * groups * kPanelGroupBytes;
      const int64_t column = j % kInt8PanelColumns;
      int32_t sum = 0;
      for (int64_t g = 0; g < groups; ++g) {
        const int8_t* w = panel + g * kPanelGroupBytes + column * kGroupBytes;
        for (int64_t t = 0; t < kGroupBytes; ++t) {
          sum += int32_t{x[g * kGroupBytes + t]} * int32_t{w[t]};
        }
      }
      float v = Dequantize(sum, a.zero_points[i], b.column_sums[j],
                           a.scales[i], b.scales[j]);
      if (bias != nullptr) v = v + bias[j];
      float& out = c[i * ldc + j];
      out = accumulate ? out + v : v;
    }
  }
}

#ifdef FAVOR_X86_TARGETS
__attribute__((target("avx2"))) void QuantizeRowsAvx2(
    int64_t rows, int64_t depth, const float* a, int64_t lda, uint8_t* q,
    int64_t q_stride, float* scales, int32_t* zero_points) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* x = a + i * lda;
    __m256 lo8 = _mm256_setzero_ps(), hi8 = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 8 <= depth; k += 8) {
      const __m256 v = _mm256_loadu_ps(x + k);
      lo8 = _mm256_min_ps(lo8, v);
      hi8 = _mm256_max_ps(hi8, v);
    }
    float lo_lanes[8], hi_lanes[8];
    _mm256_storeu_ps(lo_lanes, lo8);
    _mm256_storeu_ps(hi_lanes, hi8);
    float lo = 0, hi = 0;
    for (int t = 0; t < 8; ++t) {
      lo = std::min(lo, lo_lanes[t]);
      hi = std::max(hi, hi_lanes[t]);
    }
    for (int64_t t = k; t < depth; ++t) {
      lo = std::min(lo, x[t]);
      hi = std::max(hi, x[t]);
    }
    const RowQuantizer quantizer = QuantizerFor(lo, hi);
    uint8_t* out = q + i * q_stride;
    const __m256 inverse = _mm256_set1_ps(quantizer.inverse);
    const __m256i zero_point = _mm256_set1_epi32(quantizer.zero_point);
    const __m256i top = _mm256_set1_epi32(kInt8ActivationMax);
    const __m256i zero = _mm256_setzero_si256();
    const __m256 limit = _mm256_set1_ps(256.0f);
    const __m256 neg_limit = _mm256_set1_ps(-256.0f);
    k = 0;
    for (; k + 8 <= depth; k += 8) {
      const __m256 scaled = _mm256_mul_ps(_mm256_loadu_ps(x + k), inverse);
      // In range and not NaN (ordered compares), as QuantizeOne.
      const __m256 ok = _mm256_and_ps(_mm256_cmp_ps(scaled, neg_limit, _CMP_GE_OQ),
                                      _mm256_cmp_ps(scaled, limit, _CMP_LE_OQ));
      __m256i v = _mm256_add_epi32(_mm256_cvtps_epi32(scaled), zero_point);
      v = _mm256_min_epi32(_mm256_max_epi32(v, zero), top);
      v = _mm256_and_si256(v, _mm256_castps_si256(ok));
      // 8 int32 in [0, 127] to 8 bytes.
      const __m128i lo16 = _mm_packs_epi32(_mm256_castsi256_si128(v),
                                           _mm256_extracti128_si256(v, 1));
      const __m128i bytes = _mm_packus_epi16(lo16, lo16);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + k), bytes);
    }
    for (; k < depth; ++k) out[k] = QuantizeOne(x[k], quantizer);
    std::fill(out + depth, out + Int8PaddedDepth(depth), uint8_t{0});
    scales[i] = quantizer.scale;
    zero_points[i] = quantizer.zero_point;
  }
}

// kRows rows × 24 columns (three panels from `panel` on, `panel_stride`
// bytes apart) of int32 sums in 3 · kRows registers: per group of 4 k, one
// 32-byte load of each panel, one 4-byte broadcast
// per row, and per (row, vector) vpmaddubsw, vpmaddwd (pairs of int16 into
// int32) and vpaddd. Then the epilogue, into c, or into `spill` (then
// copied) for a last tile narrower than 24.
template <int kRows>
__attribute__((target("avx2"), always_inline)) inline void TileInt8(
    int64_t groups, const uint8_t* a, int64_t a_stride, const int8_t* panel,
    int64_t panel_stride, const float* row_scales, const int32_t* zero_points,
    const float* column_scales, const int32_t* column_sums, float* c,
    int64_t ldc, int64_t width, bool accumulate, const float* bias) {
  // Named accumulators, not an array: GCC 12 kept an array's registers
  // copied and stored back to the stack on every k (a third slower).
  __m256i s00 = _mm256_setzero_si256(), s01 = s00, s02 = s00;
  __m256i s10 = s00, s11 = s00, s12 = s00;
  __m256i s20 = s00, s21 = s00, s22 = s00;
  __m256i s30 = s00, s31 = s00, s32 = s00;
  const __m256i ones = _mm256_set1_epi16(1);
  const uint8_t* a0 = a;
  const uint8_t* a1 = a + a_stride;
  const uint8_t* a2 = a + 2 * a_stride;
  const uint8_t* a3 = a + 3 * a_stride;
  __m256i acc[4][3];
  if constexpr (kRows == 4) {
    // Four rows: 12 accumulators, the ones, a broadcast and two products
    // fill the 16 registers exactly, the panels read from memory by each
    // vpmaddubsw. GCC 12 scheduled the intrinsics' twelve products ahead of
    // their sums and spilled accumulators to the stack on every k (1.5×
    // float32 instead of 2×), so this loop is written out.
    alignas(32) int32_t sums[4][3][8];
    {
      const int8_t* w = panel;
      const uint8_t* x = a;
      int64_t left = groups;
      const int64_t stride3 = 3 * a_stride;
      asm volatile(
          "vpxor %%xmm4, %%xmm4, %%xmm4\n\t"
          "vmovdqa %%ymm4, %%ymm5\n\t"
          "vmovdqa %%ymm4, %%ymm6\n\t"
          "vmovdqa %%ymm4, %%ymm7\n\t"
          "vmovdqa %%ymm4, %%ymm8\n\t"
          "vmovdqa %%ymm4, %%ymm9\n\t"
          "vmovdqa %%ymm4, %%ymm10\n\t"
          "vmovdqa %%ymm4, %%ymm11\n\t"
          "vmovdqa %%ymm4, %%ymm12\n\t"
          "vmovdqa %%ymm4, %%ymm13\n\t"
          "vmovdqa %%ymm4, %%ymm14\n\t"
          "vmovdqa %%ymm4, %%ymm15\n\t"
          "vpcmpeqw %%ymm0, %%ymm0, %%ymm0\n\t"
          "vpsrlw $15, %%ymm0, %%ymm0\n\t"
          "test %[left], %[left]\n\t"
          "jz 2f\n\t"
          "1:\n\t"
          "vpbroadcastd (%[a]), %%ymm1\n\t"
          "vpmaddubsw (%[w]), %%ymm1, %%ymm2\n\t"
          "vpmaddubsw (%[w],%[ps]), %%ymm1, %%ymm3\n\t"
          "vpmaddwd %%ymm0, %%ymm2, %%ymm2\n\t"
          "vpmaddwd %%ymm0, %%ymm3, %%ymm3\n\t"
          "vpaddd %%ymm2, %%ymm4, %%ymm4\n\t"
          "vpaddd %%ymm3, %%ymm5, %%ymm5\n\t"
          "vpmaddubsw (%[w],%[ps],2), %%ymm1, %%ymm2\n\t"
          "vpmaddwd %%ymm0, %%ymm2, %%ymm2\n\t"
          "vpaddd %%ymm2, %%ymm6, %%ymm6\n\t"
          "vpbroadcastd (%[a],%[stride]), %%ymm1\n\t"
          "vpmaddubsw (%[w]), %%ymm1, %%ymm2\n\t"
          "vpmaddubsw (%[w],%[ps]), %%ymm1, %%ymm3\n\t"
          "vpmaddwd %%ymm0, %%ymm2, %%ymm2\n\t"
          "vpmaddwd %%ymm0, %%ymm3, %%ymm3\n\t"
          "vpaddd %%ymm2, %%ymm7, %%ymm7\n\t"
          "vpaddd %%ymm3, %%ymm8, %%ymm8\n\t"
          "vpmaddubsw (%[w],%[ps],2), %%ymm1, %%ymm2\n\t"
          "vpmaddwd %%ymm0, %%ymm2, %%ymm2\n\t"
          "vpaddd %%ymm2, %%ymm9, %%ymm9\n\t"
          "vpbroadcastd (%[a],%[stride],2), %%ymm1\n\t"
          "vpmaddubsw (%[w]), %%ymm1, %%ymm2\n\t"
          "vpmaddubsw (%[w],%[ps]), %%ymm1, %%ymm3\n\t"
          "vpmaddwd %%ymm0, %%ymm2, %%ymm2\n\t"
          "vpmaddwd %%ymm0, %%ymm3, %%ymm3\n\t"
          "vpaddd %%ymm2, %%ymm10, %%ymm10\n\t"
          "vpaddd %%ymm3, %%ymm11, %%ymm11\n\t"
          "vpmaddubsw (%[w],%[ps],2), %%ymm1, %%ymm2\n\t"
          "vpmaddwd %%ymm0, %%ymm2, %%ymm2\n\t"
          "vpaddd %%ymm2, %%ymm12, %%ymm12\n\t"
          "vpbroadcastd (%[a],%[stride3]), %%ymm1\n\t"
          "vpmaddubsw (%[w]), %%ymm1, %%ymm2\n\t"
          "vpmaddubsw (%[w],%[ps]), %%ymm1, %%ymm3\n\t"
          "vpmaddwd %%ymm0, %%ymm2, %%ymm2\n\t"
          "vpmaddwd %%ymm0, %%ymm3, %%ymm3\n\t"
          "vpaddd %%ymm2, %%ymm13, %%ymm13\n\t"
          "vpaddd %%ymm3, %%ymm14, %%ymm14\n\t"
          "vpmaddubsw (%[w],%[ps],2), %%ymm1, %%ymm2\n\t"
          "vpmaddwd %%ymm0, %%ymm2, %%ymm2\n\t"
          "vpaddd %%ymm2, %%ymm15, %%ymm15\n\t"
          "add $32, %[w]\n\t"
          "add $4, %[a]\n\t"
          "dec %[left]\n\t"
          "jnz 1b\n\t"
          "2:\n\t"
          "vmovdqu %%ymm4, 0(%[out])\n\t"
          "vmovdqu %%ymm5, 32(%[out])\n\t"
          "vmovdqu %%ymm6, 64(%[out])\n\t"
          "vmovdqu %%ymm7, 96(%[out])\n\t"
          "vmovdqu %%ymm8, 128(%[out])\n\t"
          "vmovdqu %%ymm9, 160(%[out])\n\t"
          "vmovdqu %%ymm10, 192(%[out])\n\t"
          "vmovdqu %%ymm11, 224(%[out])\n\t"
          "vmovdqu %%ymm12, 256(%[out])\n\t"
          "vmovdqu %%ymm13, 288(%[out])\n\t"
          "vmovdqu %%ymm14, 320(%[out])\n\t"
          "vmovdqu %%ymm15, 352(%[out])\n\t"
          : [w] "+r"(w), [a] "+r"(x), [left] "+r"(left)
          : [stride] "r"(a_stride), [stride3] "r"(stride3), [out] "r"(sums),
            [ps] "r"(panel_stride)
          : "cc", "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5",
            "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
            "xmm13", "xmm14", "xmm15");
    }
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
#pragma GCC unroll 3
      for (int v = 0; v < 3; ++v) {
        acc[r][v] = _mm256_load_si256(reinterpret_cast<const __m256i*>(sums[r][v]));
      }
    }
  } else {
    for (int64_t g = 0; g < groups; ++g) {
      const int8_t* w = panel + g * kPanelGroupBytes;
      const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
      const __m256i b1 = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(w + panel_stride));
      const __m256i b2 = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(w + 2 * panel_stride));
      const auto row = [&](const uint8_t* x_row, __m256i& t0, __m256i& t1,
                           __m256i& t2) __attribute__((target("avx2"),
                                                       always_inline)) {
        int32_t four;
        std::memcpy(&four, x_row + g * kGroupBytes, sizeof four);
        const __m256i x = _mm256_set1_epi32(four);
        t0 = _mm256_add_epi32(t0,
                              _mm256_madd_epi16(_mm256_maddubs_epi16(x, b0), ones));
        t1 = _mm256_add_epi32(t1,
                              _mm256_madd_epi16(_mm256_maddubs_epi16(x, b1), ones));
        t2 = _mm256_add_epi32(t2,
                              _mm256_madd_epi16(_mm256_maddubs_epi16(x, b2), ones));
      };
      row(a0, s00, s01, s02);
      if constexpr (kRows > 1) row(a1, s10, s11, s12);
      if constexpr (kRows > 2) row(a2, s20, s21, s22);
      if constexpr (kRows > 3) row(a3, s30, s31, s32);
    }
    const __m256i named[4][3] = {
        {s00, s01, s02}, {s10, s11, s12}, {s20, s21, s22}, {s30, s31, s32}};
    std::memcpy(acc, named, sizeof acc);
  }
  float spill[kTileColumns];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    const __m256 row_scale = _mm256_set1_ps(row_scales[r]);
    const __m256i zero_point = _mm256_set1_epi32(zero_points[r]);
    float* out = width == kTileColumns ? c + r * ldc : spill;
    if (width != kTileColumns && accumulate) {
      std::memcpy(spill, c + r * ldc, width * sizeof(float));
    }
#pragma GCC unroll 3
    for (int v = 0; v < 3; ++v) {
      const __m256i column_sum = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(column_sums + 8 * v));
      const __m256i sum = _mm256_sub_epi32(
          acc[r][v], _mm256_mullo_epi32(zero_point, column_sum));
      __m256 y = _mm256_mul_ps(
          _mm256_mul_ps(row_scale, _mm256_loadu_ps(column_scales + 8 * v)),
          _mm256_cvtepi32_ps(sum));
      if (bias != nullptr) y = _mm256_add_ps(y, _mm256_loadu_ps(bias + 8 * v));
      if (accumulate) y = _mm256_add_ps(_mm256_loadu_ps(out + 8 * v), y);
      _mm256_storeu_ps(out + 8 * v, y);
    }
    if (width != kTileColumns) {
      std::memcpy(c + r * ldc, spill, width * sizeof(float));
    }
  }
}

__attribute__((target("avx2"))) void GemmInt8Avx2(
    int64_t rows, int64_t cols, int64_t depth, const Int8Rows& a,
    const Int8Weight& b, float* c, int64_t ldc, bool accumulate,
    const float* bias) {
  const int64_t groups = Int8PaddedDepth(depth) / kGroupBytes;
  // The epilogue reads 24 scales, sums and biases a tile; a last tile
  // narrower than that reads padded copies.
  float last_scales[kTileColumns] = {}, last_bias[kTileColumns] = {};
  int32_t last_sums[kTileColumns] = {};
  const int64_t panel_stride = groups * kPanelGroupBytes;
  for (int64_t j = 0; j < cols; j += kTileColumns) {
    const int64_t width = std::min(kTileColumns, cols - j);
    const float* column_scales = b.scales + j;
    const int32_t* column_sums = b.column_sums + j;
    const float* panel_bias = bias != nullptr ? bias + j : nullptr;
    if (width < kTileColumns) {
      std::copy(column_scales, column_scales + width, last_scales);
      std::copy(column_sums, column_sums + width, last_sums);
      column_scales = last_scales;
      column_sums = last_sums;
      if (panel_bias != nullptr) {
        std::copy(panel_bias, panel_bias + width, last_bias);
        panel_bias = last_bias;
      }
    }
    const int8_t* panel = b.packed + j / kInt8PanelColumns * panel_stride;
    ForEachTile<kTileRowsInt8>(
        rows, [&](int64_t i, auto r) __attribute__((target("avx2"))) {
          TileInt8<decltype(r)::value>(
              groups, a.data + i * a.stride, a.stride, panel, panel_stride,
              a.scales + i,
              a.zero_points + i, column_scales, column_sums, c + i * ldc + j,
              ldc, width, accumulate, panel_bias);
        });
  }
}
#endif

}  // namespace

bool HasInt8Kernel(Int8Kernel kernel) {
#ifdef FAVOR_X86_TARGETS
  static const CpuFeatures cpu = DetectedCpuFeatures();
  switch (kernel) {
    case Int8Kernel::kPortable:
      return true;
    case Int8Kernel::kAvx2:
      return cpu.avx2;
    case Int8Kernel::kAvx512Vnni:
      return cpu.avx512f && cpu.avx512bw && cpu.avx512_vnni;
  }
  return false;
#else
  return kernel == Int8Kernel::kPortable;
#endif
}

Int8Kernel ActiveInt8Kernel() {
  const GemmKernel limit = ActiveGemmKernel();
  if (limit >= GemmKernel::kAvx512 && HasInt8Kernel(Int8Kernel::kAvx512Vnni)) {
    return Int8Kernel::kAvx512Vnni;
  }
  if (limit >= GemmKernel::kAvx2 && HasInt8Kernel(Int8Kernel::kAvx2)) {
    return Int8Kernel::kAvx2;
  }
  return Int8Kernel::kPortable;
}

const char* Int8KernelName(Int8Kernel kernel) {
  switch (kernel) {
    case Int8Kernel::kPortable:
      return "portable";
    case Int8Kernel::kAvx2:
      return "avx2";
    case Int8Kernel::kAvx512Vnni:
      return "avx512-vnni";
  }
  return "unknown";
}

int64_t Int8PaddedDepth(int64_t depth) {
  return (depth + kGroupBytes - 1) / kGroupBytes * kGroupBytes;
}

int64_t Int8PackedWeightBytes(int64_t depth, int64_t cols) {
  const int64_t panels = (cols + kInt8PanelColumns - 1) / kInt8PanelColumns;
  return (panels + kPaddingPanels) * kInt8PanelColumns * Int8PaddedDepth(depth);
}

void QuantizeWeightInt8(int64_t depth, int64_t cols, const float* b,
                        int64_t ldb, int8_t* packed, float* scales,
                        int32_t* column_sums) {
  std::fill(packed, packed + Int8PackedWeightBytes(depth, cols), int8_t{0});
  const int64_t groups = Int8PaddedDepth(depth) / kGroupBytes;
  for (int64_t j = 0; j < cols; ++j) {
    float largest = 0;
    for (int64_t k = 0; k < depth; ++k) {
      largest = std::max(largest, std::fabs(b[k * ldb + j]));
    }
    const float scale = largest > 0 ? largest / kInt8WeightMax : 1.0f;
    int8_t* panel =
        packed + j / kInt8PanelColumns * groups * kPanelGroupBytes;
    const int64_t column = j % kInt8PanelColumns;
    int32_t sum = 0;
    for (int64_t k = 0; k < depth; ++k) {
      const int32_t q = std::clamp<int32_t>(
          static_cast<int32_t>(std::nearbyint(b[k * ldb + j] / scale)),
          -kInt8WeightMax, kInt8WeightMax);
      panel[k / kGroupBytes * kPanelGroupBytes + column * kGroupBytes +
            k % kGroupBytes] = static_cast<int8_t>(q);
      sum += q;
    }
    scales[j] = scale;
    column_sums[j] = sum;
  }
}

void QuantizeRowsInt8(int64_t rows, int64_t depth, const float* a, int64_t lda,
                      uint8_t* q, int64_t q_stride, float* scales,
                      int32_t* zero_points) {
#ifdef FAVOR_X86_TARGETS
  const Int8Kernel kernel = ActiveInt8Kernel();
  if (kernel == Int8Kernel::kAvx512Vnni) {
    return int8_internal::QuantizeRowsAvx512(rows, depth, a, lda, q, q_stride,
                                             scales, zero_points);
  }
  if (kernel == Int8Kernel::kAvx2) {
    return QuantizeRowsAvx2(rows, depth, a, lda, q, q_stride, scales,
                            zero_points);
  }
#endif
  QuantizeRowsPortable(rows, depth, a, lda, q, q_stride, scales, zero_points);
}

void GemmInt8With(Int8Kernel kernel, int64_t rows, int64_t cols,
                  int64_t depth, const Int8Rows& a, const Int8Weight& b,
                  float* c, int64_t ldc, bool accumulate, const float* bias) {
  if (rows <= 0 || cols <= 0) return;
#ifdef FAVOR_X86_TARGETS
  if (kernel == Int8Kernel::kAvx512Vnni) {
    return int8_internal::GemmInt8Vnni(rows, cols, depth, a, b, c, ldc,
                                       accumulate, bias);
  }
  if (kernel == Int8Kernel::kAvx2) {
    return GemmInt8Avx2(rows, cols, depth, a, b, c, ldc, accumulate, bias);
  }
#endif
  GemmInt8Portable(rows, cols, depth, a, b, c, ldc, accumulate, bias);
}

void GemmInt8(int64_t rows, int64_t cols, int64_t depth, const Int8Rows& a,
              const Int8Weight& b, float* c, int64_t ldc, bool accumulate,
              const float* bias) {
  GemmInt8With(ActiveInt8Kernel(), rows, cols, depth, a, b, c, ldc,
               accumulate, bias);
}

}  // namespace favor::attention::cpu
