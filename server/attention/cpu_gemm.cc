#include "server/attention/cpu_gemm.h"

#include <algorithm>
#include <atomic>

#include "server/attention/cpu_tiles.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define FAVOR_HAVE_AVX512_GEMM 1
#endif

namespace favor::attention::cpu {
namespace {

std::atomic<bool> gemm_enabled{true};

#ifdef FAVOR_HAVE_AVX512_GEMM
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_ps(), which its
// own -Wmaybe-uninitialized then reports (a known false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// Rows × (16 · kVectors) of c in registers: for each k, kVectors vectors of
// b's row k and one broadcast of a(i, k) per row, kRows · kVectors FMAs. Six
// rows of four vectors keep 24 of the 32 registers as accumulators, the
// classic AVX-512 tile. `mask` selects the columns of the last vector.
template <int kRows, int kVectors>
__attribute__((target("avx512f"), always_inline)) inline void Tile(
    int64_t depth, MatrixView a, const float* b, int64_t ldb, float* c,
    int64_t ldc, bool accumulate, __mmask16 mask) {
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
  const float* a_k = a.data;
  for (int64_t k = 0; k < depth; ++k, a_k += a.column_stride, b += ldb) {
    __m512 bv[kVectors];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      const __mmask16 m = v == kVectors - 1 ? mask : __mmask16(0xFFFF);
      bv[v] = _mm512_maskz_loadu_ps(m, b + 16 * v);
    }
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m512 av = _mm512_set1_ps(a_k[r * a.row_stride]);
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) {
        acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      const __mmask16 m = v == kVectors - 1 ? mask : __mmask16(0xFFFF);
      _mm512_mask_storeu_ps(c + r * ldc + 16 * v, m, acc[r][v]);
    }
  }
}

__attribute__((target("avx512f"))) void GemmAvx512(int64_t rows, int64_t cols,
                                                   int64_t depth, MatrixView a,
                                                   const float* b, int64_t ldb,
                                                   float* c, int64_t ldc,
                                                   bool accumulate) {
  ForEachPanel(
      cols, [&](int64_t j, int vectors,
                int lanes) __attribute__((target("avx512f"))) {
        const __mmask16 mask = static_cast<__mmask16>((1u << lanes) - 1);
        WithConstant<4>(
            vectors, [&](auto v) __attribute__((target("avx512f"))) {
              ForEachTile(
                  rows, [&](int64_t i,
                            auto r) __attribute__((target("avx512f"))) {
                    Tile<decltype(r)::value, decltype(v)::value>(
                        depth,
                        {a.data + i * a.row_stride, a.row_stride,
                         a.column_stride},
                        b + j, ldb, c + i * ldc + j, ldc, accumulate, mask);
                  });
            });
      });
}
#pragma GCC diagnostic pop
#endif

// The same product as plain loops (row of c += a(i, k) · row k of b).
void GemmPortable(int64_t rows, int64_t cols, int64_t depth, MatrixView a,
                  const float* b, int64_t ldb, float* c, int64_t ldc,
                  bool accumulate) {
  for (int64_t i = 0; i < rows; ++i) {
    float* c_row = c + i * ldc;
    if (!accumulate) std::fill(c_row, c_row + cols, 0.0f);
    for (int64_t k = 0; k < depth; ++k) {
      const float a_ik = a.data[i * a.row_stride + k * a.column_stride];
      const float* b_row = b + k * ldb;
      for (int64_t j = 0; j < cols; ++j) c_row[j] += a_ik * b_row[j];
    }
  }
}

bool CpuHasAvx512() {
#ifdef FAVOR_HAVE_AVX512_GEMM
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
#else
  return false;
#endif
}

}  // namespace

bool GemmIsFast() {
  return CpuHasAvx512() && gemm_enabled.load(std::memory_order_relaxed);
}

void SetFastGemmEnabled(bool enabled) {
  gemm_enabled.store(enabled, std::memory_order_relaxed);
}

void Gemm(int64_t rows, int64_t cols, int64_t depth, MatrixView a,
          const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  if (rows <= 0 || cols <= 0) return;
#ifdef FAVOR_HAVE_AVX512_GEMM
  if (GemmIsFast()) {
    GemmAvx512(rows, cols, depth, a, b, ldb, c, ldc, accumulate);
    return;
  }
#endif
  GemmPortable(rows, cols, depth, a, b, ldb, c, ldc, accumulate);
}

}  // namespace favor::attention::cpu
