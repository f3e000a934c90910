#include "server/model/row_kernels.h"

#include <cmath>

#include "server/common/multiversion.h"

namespace favor::model::internal {

namespace {

// Σ f(row[c]) over a row in 16 float lanes (so that the loop vectorises:
// a single running sum would fix the order of the additions), the lanes
// then summed in double. Exact for any split of the rows into blocks.
constexpr int kLanes = 16;

template <typename F>
inline double LaneSum(const float* row, int64_t cols, F f) {
  float lanes[kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= cols; c += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += f(row[c + l]);
  }
  double sum = 0;
  for (; c < cols; ++c) sum += f(row[c]);
  for (int l = 0; l < kLanes; ++l) sum += lanes[l];
  return sum;
}

}  // namespace

FAVOR_MULTIVERSION
void LayerNormRowsInPlace(float* x, int64_t rows, int64_t cols, int64_t stride,
                          const float* weight, const float* bias, float eps) {
  for (int64_t i = 0; i < rows; ++i) {
    float* row = x + i * stride;
    const float mean =
        static_cast<float>(LaneSum(row, cols, [](float v) { return v; }) /
                           static_cast<double>(cols));
    const double squares = LaneSum(row, cols, [mean](float v) {
      const float centred = v - mean;
      return centred * centred;
    });
    const float scale = static_cast<float>(
        1.0 / std::sqrt(squares / static_cast<double>(cols) + eps));
    for (int64_t c = 0; c < cols; ++c) {
      row[c] = (row[c] - mean) * scale * weight[c] + bias[c];
    }
  }
}

FAVOR_MULTIVERSION
void RotateHalfInPlace(float* x, int64_t rows, int64_t heads, int64_t head_dim,
                       int64_t stride, const float* cos, const float* sin) {
  const int64_t half = head_dim / 2;
  for (int64_t i = 0; i < rows; ++i) {
    const float* c = cos + i * half;
    const float* s = sin + i * half;
    for (int64_t h = 0; h < heads; ++h) {
      float* first = x + i * stride + h * head_dim;
      float* second = first + half;
      for (int64_t j = 0; j < half; ++j) {
        const float x1 = first[j], x2 = second[j];
        first[j] = x1 * c[j] - x2 * s[j];
        second[j] = x2 * c[j] + x1 * s[j];
      }
    }
  }
}

}  // namespace favor::model::internal
