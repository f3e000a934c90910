#include "server/attention/cpu_gemm.h"

#include <algorithm>
#include <atomic>
#include <type_traits>

#include "server/attention/cpu_features.h"
#include "server/attention/cpu_gelu.h"
#include "server/attention/cpu_tiles.h"
#include "server/common/multiversion.h"

#ifdef FAVOR_X86_TARGETS
#include <immintrin.h>
#endif

namespace favor::attention::cpu {
namespace {

std::atomic<GemmKernel> gemm_limit{GemmKernel::kAvx512};

// The AVX2 tile: kAvx2TileRows rows of kAvx2Vectors 8-lane vectors, 12 of
// the 16 registers as accumulators.
constexpr int kAvx2TileRows = 4;
constexpr int kAvx2Vectors = 3;

// Where a tile's sums start: zero, c's values (accumulate), the bias, or
// both.
enum class Start { kZero, kC, kBias, kCPlusBias };

Start StartOf(bool accumulate, const float* bias) {
  if (accumulate) return bias != nullptr ? Start::kCPlusBias : Start::kC;
  return bias != nullptr ? Start::kBias : Start::kZero;
}

// Where a kernel's panel of b starts, and its rows' stride: in b itself
// (columns [j, j + panel) at b + j, row stride ldb), or packed by PackB
// (panel after panel, each `depth` rows of kPanel floats, so a tile reads
// one contiguous run instead of `depth` rows a whole weight row apart).
struct BSource {
  const float* data;
  int64_t ldb;           // unpacked: b's row stride
  int64_t panel_floats;  // packed: depth · kPanel; 0: unpacked
  template <int64_t kPanel>
  const float* Panel(int64_t j) const {
    return panel_floats != 0 ? data + j / kPanel * panel_floats : data + j;
  }
  template <int64_t kPanel>
  int64_t RowStride() const {
    return panel_floats != 0 ? kPanel : ldb;
  }
};

#ifdef FAVOR_X86_TARGETS
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_ps(), which its
// own -Wmaybe-uninitialized then reports (a known false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// Rows × (16 · kVectors) of c in registers: for each k, kVectors vectors of
// b's row k and one broadcast of a(i, k) per row, kRows · kVectors FMAs. Six
// rows of four vectors keep 24 of the 32 registers as accumulators, the
// classic AVX-512 tile. `mask` selects the columns of the last vector.
template <int kRows, int kVectors>
__attribute__((target("avx512f"), always_inline)) inline void Tile512(
    int64_t depth, MatrixView a, const float* b, int64_t ldb, float* c,
    int64_t ldc, Start start, const float* bias, __mmask16 mask, bool gelu) {
  __m512 acc[kRows][kVectors];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      const __mmask16 m = v == kVectors - 1 ? mask : __mmask16(0xFFFF);
      const bool from_c = start == Start::kC || start == Start::kCPlusBias;
      const bool from_bias =
          start == Start::kBias || start == Start::kCPlusBias;
      acc[r][v] = from_c ? _mm512_maskz_loadu_ps(m, c + r * ldc + 16 * v)
                         : _mm512_setzero_ps();
      if (from_bias) {
        acc[r][v] =
            _mm512_add_ps(acc[r][v], _mm512_maskz_loadu_ps(m, bias + 16 * v));
      }
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
      _mm512_mask_storeu_ps(c + r * ldc + 16 * v, m,
                            gelu ? Gelu16(acc[r][v]) : acc[r][v]);
    }
  }
}

__attribute__((target("avx512f"))) void GemmAvx512(
    int64_t rows, int64_t cols, int64_t depth, MatrixView a, BSource source,
    float* c, int64_t ldc, Start start, const float* bias, bool gelu) {
  constexpr int64_t kPanel = 16 * 4;
  const int64_t ldb = source.RowStride<kPanel>();
  ForEachPanel<16, 4>(
      cols, [&](int64_t j, int vectors,
                int lanes) __attribute__((target("avx512f"))) {
        const __mmask16 mask = static_cast<__mmask16>((1u << lanes) - 1);
        WithConstant<4>(
            vectors, [&](auto v) __attribute__((target("avx512f"))) {
              ForEachTile(
                  rows, [&](int64_t i, auto r)
                            __attribute__((target("avx512f"))) {
                              Tile512<decltype(r)::value, decltype(v)::value>(
                                  depth,
                                  {a.data + i * a.row_stride, a.row_stride,
                                   a.column_stride},
                                  source.Panel<kPanel>(j), ldb,
                                  c + i * ldc + j, ldc, start,
                                  bias != nullptr ? bias + j : nullptr, mask,
                                  gelu);
                            });
            });
      });
}

// The AVX2 tile: rows × (8 · kVectors) of c, kAvx2TileRows (four) rows of
// kAvx2Vectors (three) vectors keeping 12 of the 16 registers as
// accumulators. AVX2 has no mask registers, and its masked moves are slow
// (vmaskmovps): only a panel whose last vector is partial (kPartial) uses
// them, for that vector, with `mask` holding −1 in its lanes in use.
template <int kRows, int kVectors, bool kPartial>
__attribute__((target("avx2,fma"), always_inline)) inline void Tile256(
    int64_t depth, MatrixView a, const float* b, int64_t ldb, float* c,
    int64_t ldc, Start start, const float* bias, __m256i mask) {
  const auto load = [mask](const float* p, int v)
      __attribute__((target("avx2,fma"), always_inline)) {
    return kPartial && v == kVectors - 1 ? _mm256_maskload_ps(p, mask)
                                         : _mm256_loadu_ps(p);
  };
  __m256 acc[kRows][kVectors];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      const bool from_c = start == Start::kC || start == Start::kCPlusBias;
      const bool from_bias =
          start == Start::kBias || start == Start::kCPlusBias;
      acc[r][v] = from_c ? load(c + r * ldc + 8 * v, v) : _mm256_setzero_ps();
      if (from_bias)
        acc[r][v] = _mm256_add_ps(acc[r][v], load(bias + 8 * v, v));
    }
  }
  const float* a_k = a.data;
  for (int64_t k = 0; k < depth; ++k, a_k += a.column_stride, b += ldb) {
    __m256 bv[kVectors];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) bv[v] = load(b + 8 * v, v);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m256 av = _mm256_broadcast_ss(a_k + r * a.row_stride);
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) {
        acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      float* out = c + r * ldc + 8 * v;
      if (kPartial && v == kVectors - 1) {
        _mm256_maskstore_ps(out, mask, acc[r][v]);
      } else {
        _mm256_storeu_ps(out, acc[r][v]);
      }
    }
  }
}

__attribute__((target("avx2,fma"))) void GemmAvx2(
    int64_t rows, int64_t cols, int64_t depth, MatrixView a, BSource source,
    float* c, int64_t ldc, Start start, const float* bias) {
  constexpr int64_t kPanel = 8 * kAvx2Vectors;
  const int64_t ldb = source.RowStride<kPanel>();
  ForEachPanel<8, kAvx2Vectors>(
      cols, [&](int64_t j, int vectors,
                int lanes) __attribute__((target("avx2,fma"))) {
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), lane);
        const auto panel = [&](auto v, auto partial)
            __attribute__((target("avx2,fma"))) {
          ForEachTile<kAvx2TileRows>(
              rows, [&](int64_t i, auto r) __attribute__((target("avx2,fma"))) {
                Tile256<decltype(r)::value, decltype(v)::value,
                        decltype(partial)::value>(
                    depth,
                    {a.data + i * a.row_stride, a.row_stride, a.column_stride},
                    source.Panel<kPanel>(j), ldb, c + i * ldc + j, ldc, start,
                    bias != nullptr ? bias + j : nullptr, mask);
              });
        };
        WithConstant<kAvx2Vectors>(
            vectors, [&](auto v) __attribute__((target("avx2,fma"))) {
              if (lanes == 8) {
                panel(v, std::false_type());
              } else {
                panel(v, std::true_type());
              }
            });
      });
}
#pragma GCC diagnostic pop
#endif

// The same product as plain loops (row of c += a(i, k) · row k of b).
void GemmPortable(int64_t rows, int64_t cols, int64_t depth, MatrixView a,
                  const float* b, int64_t ldb, float* c, int64_t ldc,
                  Start start, const float* bias) {
  for (int64_t i = 0; i < rows; ++i) {
    float* c_row = c + i * ldc;
    if (start == Start::kZero) std::fill(c_row, c_row + cols, 0.0f);
    if (start == Start::kBias) std::copy(bias, bias + cols, c_row);
    if (start == Start::kCPlusBias) {
      for (int64_t j = 0; j < cols; ++j) c_row[j] += bias[j];
    }
    for (int64_t k = 0; k < depth; ++k) {
      const float a_ik = a.data[i * a.row_stride + k * a.column_stride];
      const float* b_row = b + k * ldb;
      for (int64_t j = 0; j < cols; ++j) c_row[j] += a_ik * b_row[j];
    }
  }
}

// The widest kernel this CPU runs.
GemmKernel WidestKernel() {
#ifdef FAVOR_X86_TARGETS
  static const GemmKernel widest = [] {
    const CpuFeatures cpu = DetectedCpuFeatures();
    if (cpu.avx512f) return GemmKernel::kAvx512;
    if (cpu.avx2 && cpu.fma) return GemmKernel::kAvx2;
    return GemmKernel::kPortable;
  }();
  return widest;
#else
  return GemmKernel::kPortable;
#endif
}

}  // namespace

GemmKernel ActiveGemmKernel() {
  return std::min(WidestKernel(), gemm_limit.load(std::memory_order_relaxed));
}

const char* GemmKernelName(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::kPortable:
      return "portable";
    case GemmKernel::kAvx2:
      return "avx2";
    case GemmKernel::kAvx512:
      return "avx512";
  }
  return "unknown";
}

bool GemmIsFast() { return ActiveGemmKernel() != GemmKernel::kPortable; }

void LimitGemmKernel(GemmKernel kernel) {
  gemm_limit.store(kernel, std::memory_order_relaxed);
}

void SetFastGemmEnabled(bool enabled) {
  LimitGemmKernel(enabled ? GemmKernel::kAvx512 : GemmKernel::kPortable);
}

namespace {

// The epilogue as a pass over c, for the kernels without it in their tiles.
void ApplyEpilogue(int64_t rows, int64_t cols, float* c, int64_t ldc,
                   Epilogue epilogue) {
  if (epilogue != Epilogue::kGelu) return;
  for (int64_t i = 0; i < rows; ++i) {
    float* row = c + i * ldc;
    for (int64_t j = 0; j < cols; ++j) row[j] = GeluScalar(row[j]);
  }
}

void Run(int64_t rows, int64_t cols, int64_t depth, MatrixView a,
         BSource source, GemmKernel kernel, float* c, int64_t ldc,
         bool accumulate, const float* bias, Epilogue epilogue) {
  if (rows <= 0 || cols <= 0) return;
  const Start start = StartOf(accumulate, bias);
#ifdef FAVOR_X86_TARGETS
  if (kernel == GemmKernel::kAvx512) {
    return GemmAvx512(rows, cols, depth, a, source, c, ldc, start, bias,
                      epilogue == Epilogue::kGelu);
  }
  if (kernel == GemmKernel::kAvx2) {
    GemmAvx2(rows, cols, depth, a, source, c, ldc, start, bias);
    return ApplyEpilogue(rows, cols, c, ldc, epilogue);
  }
#endif
  // Packed b has no plain-loop kernel (PanelColumns(kPortable) is 0).
  GemmPortable(rows, cols, depth, a, source.data, source.ldb, c, ldc, start,
               bias);
  ApplyEpilogue(rows, cols, c, ldc, epilogue);
}

}  // namespace

bool GemmFusesGelu() { return ActiveGemmKernel() == GemmKernel::kAvx512; }

void Gemm(int64_t rows, int64_t cols, int64_t depth, MatrixView a,
          const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate,
          const float* bias, Epilogue epilogue) {
  Run(rows, cols, depth, a, {b, ldb, 0}, ActiveGemmKernel(), c, ldc,
      accumulate, bias, epilogue);
}

int64_t PanelColumns(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::kPortable:
      return 0;
    case GemmKernel::kAvx2:
      return 8 * kAvx2Vectors;
    case GemmKernel::kAvx512:
      return 16 * 4;
  }
  return 0;
}

int64_t PackedBSize(int64_t depth, int64_t cols, GemmKernel kernel) {
  const int64_t panel = PanelColumns(kernel);
  if (panel == 0) return 0;
  return (cols + panel - 1) / panel * panel * depth;
}

void PackB(int64_t depth, int64_t cols, const float* b, int64_t ldb,
           GemmKernel kernel, float* packed) {
  const int64_t panel = PanelColumns(kernel);
  for (int64_t j = 0; j < cols; j += panel) {
    const int64_t width = std::min(panel, cols - j);
    for (int64_t k = 0; k < depth; ++k) {
      const float* row = b + k * ldb + j;
      float* out = packed + j * depth + k * panel;
      std::copy(row, row + width, out);
      std::fill(out + width, out + panel, 0.0f);
    }
  }
}

void GemmPackedB(int64_t rows, int64_t cols, int64_t depth, MatrixView a,
                 const float* packed, GemmKernel packed_for, float* c,
                 int64_t ldc, bool accumulate, const float* bias,
                 Epilogue epilogue) {
  Run(rows, cols, depth, a, {packed, 0, depth * PanelColumns(packed_for)},
      packed_for, c, ldc, accumulate, bias, epilogue);
}

}  // namespace favor::attention::cpu
