#include "server/attention/cpu_gemm_bf16.h"

#include <atomic>
#include <cstring>

#include "server/attention/cpu_features.h"
#include "server/attention/cpu_tiles.h"
#include "server/common/multiversion.h"

#ifdef FAVOR_X86_TARGETS
#include <immintrin.h>
#endif

namespace favor::attention::cpu {
namespace {

std::atomic<bool> gemm_bf16_enabled{true};

// Where the left-hand operand's pairs lie: pair p of row i (elements 2p and
// 2p + 1 of the depth) starts at data + i · row_step + p · pair_step.
// Row-major a: (lda, 2); a packed by PackBF16 along the depth: (2, 2·rows).
struct PairLayout {
  const BFloat16Bits* data;
  int64_t row_step;
  int64_t pair_step;

  const BFloat16Bits* Pair(int64_t i, int64_t p) const {
    return data + i * row_step + p * pair_step;
  }
  PairLayout FromRow(int64_t i) const {
    return {data + i * row_step, row_step, pair_step};
  }
};

// One pair of a's row (elements k and k + 1, k even) as the 32-bit word
// vdpbf16ps broadcasts; `single` when k + 1 is past the depth, whose
// missing half must be zero (the packed b's is, but 0 · NaN is NaN).
inline uint32_t PairOf(const BFloat16Bits* a, bool single) {
  if (single) return a[0];
  uint32_t pair;
  std::memcpy(&pair, a, sizeof(pair));
  return pair;
}

#ifdef FAVOR_X86_TARGETS
// As in cpu_gemm.cc: GCC 12's intrinsics trip its own
// -Wmaybe-uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define FAVOR_BF16_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// Rows × (16 · kVectors) of c in registers; per pair of the depth,
// kVectors vectors of packed b (16 pairs each) and one broadcast pair of
// a per row, kRows · kVectors vdpbf16ps. Six rows of four vectors keep 24
// of the 32 registers as accumulators, as the float32 kernel does.
template <int kRows, int kVectors>
FAVOR_BF16_TARGET __attribute__((always_inline)) inline void Tile(
    int64_t depth, PairLayout a, const BFloat16Bits* packed_b, int64_t cols,
    float* c, int64_t ldc, bool accumulate, __mmask16 mask) {
  __m512 acc[kRows][kVectors];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      const __mmask16 m = v == kVectors - 1 ? mask : __mmask16(0xFFFF);
      acc[r][v] = accumulate ? _mm512_maskz_loadu_ps(m, c + r * ldc + 16 * v)
                             : _mm512_setzero_ps();
    }
  }
  // One pair of the depth: `single` for an odd depth's last element.
  const auto step = [&](int64_t p, bool single) FAVOR_BF16_TARGET {
    const BFloat16Bits* b_row = packed_b + p * 2 * cols;
    __m512bh bv[kVectors];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      const __mmask16 m = v == kVectors - 1 ? mask : __mmask16(0xFFFF);
      bv[v] = (__m512bh)_mm512_maskz_loadu_epi32(m, b_row + 32 * v);
    }
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(
          static_cast<int>(PairOf(a.Pair(r, p), single)));
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) {
        acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
      }
    }
  };
  for (int64_t p = 0; p < depth / 2; ++p) step(p, false);
  if (depth % 2 != 0) step(depth / 2, true);
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      const __mmask16 m = v == kVectors - 1 ? mask : __mmask16(0xFFFF);
      _mm512_mask_storeu_ps(c + r * ldc + 16 * v, m, acc[r][v]);
    }
  }
}

FAVOR_BF16_TARGET void GemmAvx512BF16(int64_t rows, int64_t cols, int64_t depth,
                                      PairLayout a,
                                      const BFloat16Bits* packed_b, float* c,
                                      int64_t ldc, bool accumulate) {
  ForEachPanel<16, 4>(
      cols, [&](int64_t j, int vectors, int lanes) FAVOR_BF16_TARGET {
        const __mmask16 mask = static_cast<__mmask16>((1u << lanes) - 1);
        WithConstant<4>(vectors, [&](auto v) FAVOR_BF16_TARGET {
          ForEachTile(rows, [&](int64_t i, auto r) FAVOR_BF16_TARGET {
            Tile<decltype(r)::value, decltype(v)::value>(
                depth, a.FromRow(i), packed_b + 2 * j, cols, c + i * ldc + j,
                ldc, accumulate, mask);
          });
        });
      });
}

// 16 float32 → their bfloat16 bits in the upper halves of 32-bit lanes,
// rounded exactly as ToBFloat16 (nearest even; NaN quieted).
FAVOR_BF16_TARGET __attribute__((always_inline)) inline __m512i RoundedHigh(
    __m512 x) {
  const __m512i bits = _mm512_castps_si512(x);
  const __m512i lsb =
      _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_add_epi32(bits, _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), lsb));
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(
      _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFFFF)),
      _mm512_set1_epi32(0x7F800000));
  return _mm512_mask_mov_epi32(
      rounded, nan, _mm512_or_si512(bits, _mm512_set1_epi32(0x400000)));
}

// The mask of the first min(16, left) lanes.
inline __mmask16 LanesLeft(int64_t left) {
  return left >= 16 ? __mmask16(0xFFFF)
                    : static_cast<__mmask16>((1u << left) - 1);
}

// ConvertToBF16 for rows with unit column stride.
FAVOR_BF16_TARGET void ConvertRowsAvx512(int64_t rows, int64_t cols,
                                         const float* x, int64_t ldx,
                                         BFloat16Bits* out, int64_t ldo) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; j += 16) {
      const __mmask16 m = LanesLeft(cols - j);
      const __m512i high =
          RoundedHigh(_mm512_maskz_loadu_ps(m, x + i * ldx + j));
      _mm256_mask_storeu_epi16(
          out + i * ldo + j, m,
          _mm512_cvtepi32_epi16(_mm512_srli_epi32(high, 16)));
    }
  }
}

// PackBF16's loop: rows 2p and 2p + 1 interleaved, a zero row past an odd
// depth; `bits(p, m)` gives the bfloat16 bits of the masked lanes at p in
// the low halves of 32-bit lanes.
template <typename T, typename Bits>
FAVOR_BF16_TARGET __attribute__((always_inline)) inline void PackPairsAvx512(
    int64_t depth, int64_t cols, const T* b, int64_t ldb, BFloat16Bits* packed,
    Bits bits) {
  for (int64_t k = 0; k < depth; k += 2) {
    const T* even = b + k * ldb;
    const T* odd = k + 1 < depth ? even + ldb : nullptr;
    auto* pairs = reinterpret_cast<uint32_t*>(packed + k * cols);
    for (int64_t j = 0; j < cols; j += 16) {
      const __mmask16 m = LanesLeft(cols - j);
      const __m512i high = odd == nullptr
                               ? _mm512_setzero_si512()
                               : _mm512_slli_epi32(bits(odd + j, m), 16);
      _mm512_mask_storeu_epi32(pairs + j, m,
                               _mm512_or_si512(bits(even + j, m), high));
    }
  }
}

// PackBF16 for float32 b with unit column stride: rounded.
FAVOR_BF16_TARGET void PackRowsAvx512(int64_t depth, int64_t cols,
                                      const float* b, int64_t ldb,
                                      BFloat16Bits* packed) {
  PackPairsAvx512(depth, cols, b, ldb, packed,
                  [](const float* p, __mmask16 m) FAVOR_BF16_TARGET {
                    return _mm512_srli_epi32(
                        RoundedHigh(_mm512_maskz_loadu_ps(m, p)), 16);
                  });
}

// PackBF16 from bfloat16 rows: no rounding.
FAVOR_BF16_TARGET void PackBitsAvx512(int64_t depth, int64_t cols,
                                      const BFloat16Bits* b, int64_t ldb,
                                      BFloat16Bits* packed) {
  PackPairsAvx512(
      depth, cols, b, ldb, packed,
      [](const BFloat16Bits* p, __mmask16 m) FAVOR_BF16_TARGET {
        return _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
      });
}
#undef FAVOR_BF16_TARGET
#pragma GCC diagnostic pop
#endif

// The same sums as plain loops, pair by pair in vdpbf16ps's order.
void GemmPortable(int64_t rows, int64_t cols, int64_t depth, PairLayout a,
                  const BFloat16Bits* packed_b, float* c, int64_t ldc,
                  bool accumulate) {
  const int64_t pairs = (depth + 1) / 2;
  for (int64_t i = 0; i < rows; ++i) {
    float* c_row = c + i * ldc;
    for (int64_t j = 0; j < cols; ++j) {
      float sum = accumulate ? c_row[j] : 0.0f;
      for (int64_t p = 0; p < pairs; ++p) {
        const BFloat16Bits* b = packed_b + p * 2 * cols + 2 * j;
        const BFloat16Bits* pair = a.Pair(i, p);
        const bool single = 2 * p + 1 == depth;
        const float odd = single ? 0.0f : FromBFloat16(pair[1]);
        sum += odd * FromBFloat16(b[1]);
        sum += FromBFloat16(pair[0]) * FromBFloat16(b[0]);
      }
      c_row[j] = sum;
    }
  }
}

}  // namespace

bool GemmBF16IsFast() {
#ifdef FAVOR_X86_TARGETS
  static const bool has = DetectedCpuFeatures().avx512_bf16 &&
                          DetectedCpuFeatures().avx512bw &&
                          DetectedCpuFeatures().avx512vl;
  return has && gemm_bf16_enabled.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

void SetFastGemmBF16Enabled(bool enabled) {
  gemm_bf16_enabled.store(enabled, std::memory_order_relaxed);
}

void PackBF16(int64_t depth, int64_t cols, MatrixView b, BFloat16Bits* packed) {
#ifdef FAVOR_X86_TARGETS
  if (b.column_stride == 1 && GemmBF16IsFast()) {
    PackRowsAvx512(depth, cols, b.data, b.row_stride, packed);
    return;
  }
#endif
  for (int64_t k = 0; k < (depth + 1) / 2 * 2; ++k) {
    BFloat16Bits* row = packed + (k / 2) * 2 * cols + k % 2;
    const float* b_row = b.data + k * b.row_stride;
    for (int64_t j = 0; j < cols; ++j) {
      row[2 * j] = k < depth ? ToBFloat16(b_row[j * b.column_stride]) : 0;
    }
  }
}

void CopyBF16(int64_t rows, int64_t cols, const BFloat16Bits* x,
              int64_t row_stride, int64_t column_stride, BFloat16Bits* out,
              int64_t ldo) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      out[i * ldo + j] = x[i * row_stride + j * column_stride];
    }
  }
}

void PackBF16(int64_t depth, int64_t cols, const BFloat16Bits* b, int64_t ldb,
              BFloat16Bits* packed) {
#ifdef FAVOR_X86_TARGETS
  if (GemmBF16IsFast()) {
    PackBitsAvx512(depth, cols, b, ldb, packed);
    return;
  }
#endif
  for (int64_t k = 0; k < (depth + 1) / 2 * 2; ++k) {
    BFloat16Bits* row = packed + (k / 2) * 2 * cols + k % 2;
    for (int64_t j = 0; j < cols; ++j) {
      row[2 * j] = k < depth ? b[k * ldb + j] : 0;
    }
  }
}

void ConvertToBF16(int64_t rows, int64_t cols, MatrixView x, BFloat16Bits* out,
                   int64_t ldo) {
#ifdef FAVOR_X86_TARGETS
  if (x.column_stride == 1 && GemmBF16IsFast()) {
    ConvertRowsAvx512(rows, cols, x.data, x.row_stride, out, ldo);
    return;
  }
#endif
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      out[i * ldo + j] =
          ToBFloat16(x.data[i * x.row_stride + j * x.column_stride]);
    }
  }
}

namespace {

void GemmPairs(int64_t rows, int64_t cols, int64_t depth, PairLayout a,
               const BFloat16Bits* packed_b, float* c, int64_t ldc,
               bool accumulate) {
  if (rows <= 0 || cols <= 0) return;
#ifdef FAVOR_X86_TARGETS
  if (GemmBF16IsFast()) {
    GemmAvx512BF16(rows, cols, depth, a, packed_b, c, ldc, accumulate);
    return;
  }
#endif
  GemmPortable(rows, cols, depth, a, packed_b, c, ldc, accumulate);
}

}  // namespace

void GemmBF16(int64_t rows, int64_t cols, int64_t depth, const BFloat16Bits* a,
              int64_t lda, const BFloat16Bits* packed_b, float* c, int64_t ldc,
              bool accumulate) {
  GemmPairs(rows, cols, depth, {a, lda, 2}, packed_b, c, ldc, accumulate);
}

void GemmBF16PackedA(int64_t rows, int64_t cols, int64_t depth,
                     const BFloat16Bits* packed_a, const BFloat16Bits* packed_b,
                     float* c, int64_t ldc, bool accumulate) {
  GemmPairs(rows, cols, depth, {packed_a, 2, 2 * rows}, packed_b, c, ldc,
            accumulate);
}

}  // namespace favor::attention::cpu
