// What the int8 products' kernels share beyond cpu_gemm_int8.h: the packed
// weight's group layout, the rows' quantiser, and the AVX512-VNNI kernel
// and AVX-512 quantiser (cpu_gemm_int8_vnni.cc), which cpu_gemm_int8.cc
// dispatches to.
//
// Implementation detail of server/attention (cpu_gemm_int8*.cc): not for
// other modules.
#ifndef FAVOR_SERVER_ATTENTION_CPU_GEMM_INT8_INTERNAL_H_
#define FAVOR_SERVER_ATTENTION_CPU_GEMM_INT8_INTERNAL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "server/attention/cpu_gemm_int8.h"
#include "server/common/multiversion.h"  // FAVOR_X86_TARGETS

namespace favor::attention::cpu::int8_internal {

inline constexpr int64_t kGroupBytes = 4;  // k per 32-bit lane
// One group of a panel: 8 columns × 4 bytes.
inline constexpr int64_t kPanelGroupBytes =
    kInt8PanelColumns * kGroupBytes;  // 32

// Per row: (scale, inverse scale, zero point) from the row's range.
struct RowQuantizer {
  float scale;
  float inverse;
  int32_t zero_point;
};

inline RowQuantizer QuantizerFor(float lo, float hi) {
  // lo ≤ 0 ≤ hi, so 0 is exact and |x| · inverse ≤ kInt8ActivationMax.
  const float range = hi - lo;
  if (!(range > 0) || !std::isfinite(range)) return {1.0f, 1.0f, 0};
  const float inverse = static_cast<float>(kInt8ActivationMax) / range;
  const int32_t zero_point =
      static_cast<int32_t>(std::nearbyint(-lo * inverse));
  return {range / static_cast<float>(kInt8ActivationMax), inverse,
          std::clamp<int32_t>(zero_point, 0, kInt8ActivationMax)};
}

#ifdef FAVOR_X86_TARGETS
// QuantizeRowsInt8 with AVX-512 F and BW: the same bytes, scales and zero
// points as the portable loop.
void QuantizeRowsAvx512(int64_t rows, int64_t depth, const float* a,
                        int64_t lda, uint8_t* q, int64_t q_stride,
                        float* scales, int32_t* zero_points);

// GemmInt8 on AVX-512 F, BW and VNNI: the same bits as the portable loops.
void GemmInt8Vnni(int64_t rows, int64_t cols, int64_t depth, const Int8Rows& a,
                  const Int8Weight& b, float* c, int64_t ldc, bool accumulate,
                  const float* bias);
#endif

}  // namespace favor::attention::cpu::int8_internal

#endif  // FAVOR_SERVER_ATTENTION_CPU_GEMM_INT8_INTERNAL_H_
