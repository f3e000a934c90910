// Element-wise loops over float32 rows for the encoder's CPU hot path:
// LayerNorm and the rotary rotation in place, where LibTorch would make a
// new tensor for each step (a LayerNorm, a rotation's four products and two
// sums) and read every row again for each. Plain float arrays, no LibTorch;
// compiled for several x86 levels and picked at load time, like
// attention/cpu_kernels.h.
//
// Implementation detail of server/model: not for other modules.
#ifndef FAVOR_SERVER_MODEL_ROW_KERNELS_H_
#define FAVOR_SERVER_MODEL_ROW_KERNELS_H_

#include <cstdint>

namespace favor::model::internal {

// x[i, :] = (x[i, :] − mean) / √(var + eps) · weight + bias for each of
// `rows` rows of `cols` floats (row stride `stride`), mean and variance
// (biased, as LayerNorm's) over the row, summed in double.
void LayerNormRowsInPlace(float* x, int64_t rows, int64_t cols, int64_t stride,
                          const float* weight, const float* bias, float eps);

// Rotates `heads` heads of `rows` rows in place by the rows' angles
// (rotate-half: features i and i + d/2 of each head): x is (rows, heads, d)
// with row stride `stride` and heads contiguous; cos and sin are (rows, d/2)
// with row stride d/2.
void RotateHalfInPlace(float* x, int64_t rows, int64_t heads, int64_t head_dim,
                       int64_t stride, const float* cos, const float* sin);

}  // namespace favor::model::internal

#endif  // FAVOR_SERVER_MODEL_ROW_KERNELS_H_
