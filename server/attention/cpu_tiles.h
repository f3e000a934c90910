// The loops that the register-tile products (cpu_gemm.cc in float32,
// cpu_gemm_bf16.cc in bfloat16) share: a product's columns go in panels of
// up to kMaxVectors vectors of kLanes lanes (AVX-512: four of 16; AVX2:
// three of 8), the last one masked, and each panel's rows in tiles of up to
// six rows (AVX-512) or four (AVX2); tile shapes are template arguments (the accumulators must be registers),
// chosen here from run-time counts.
//
// The callbacks are lambdas carrying the caller's target attribute (GCC
// does not inline AVX-512 code into functions without it).
//
// Implementation detail of server/attention: not for other modules.
#ifndef FAVOR_SERVER_ATTENTION_CPU_TILES_H_
#define FAVOR_SERVER_ATTENTION_CPU_TILES_H_

#include <cstdint>
#include <type_traits>

namespace favor::attention::cpu {

// Rows per full AVX-512 tile: six rows of four vectors keep 24 of the 32
// registers as accumulators, the classic tile.
inline constexpr int kTileRows = 6;

// fn(std::integral_constant<int, n>()) for a run-time 1 ≤ n ≤ kMax.
template <int kMax, typename Fn>
inline void WithConstant(int64_t n, Fn&& fn) {
  if constexpr (kMax > 0) {
    if (n == kMax) {
      fn(std::integral_constant<int, kMax>());
    } else {
      WithConstant<kMax - 1>(n, fn);
    }
  }
}

// panel(j, vectors, lanes) for each panel of columns [j, j + kLanes ·
// kMaxVectors) of `cols`: `vectors` vectors of kLanes lanes wide, the last
// with `lanes` lanes (1 to kLanes) in use.
template <int kLanes, int kMaxVectors, typename Fn>
inline void ForEachPanel(int64_t cols, Fn&& panel) {
  constexpr int64_t kPanelColumns = int64_t{kLanes} * kMaxVectors;
  for (int64_t j = 0; j < cols; j += kPanelColumns) {
    const int64_t width = cols - j < kPanelColumns ? cols - j : kPanelColumns;
    const int vectors = static_cast<int>((width + kLanes - 1) / kLanes);
    panel(j, vectors, static_cast<int>(width - kLanes * (vectors - 1)));
  }
}

// tile(i, std::integral_constant<int, rows>()) for each tile of rows
// [i, i + rows) of `rows`: full tiles of kRows, then the remainder.
template <int kRows = kTileRows, typename Fn>
inline void ForEachTile(int64_t rows, Fn&& tile) {
  int64_t i = 0;
  for (; i + kRows <= rows; i += kRows) {
    tile(i, std::integral_constant<int, kRows>());
  }
  WithConstant<kRows - 1>(rows - i, [&](auto count) { tile(i, count); });
}

}  // namespace favor::attention::cpu

#endif  // FAVOR_SERVER_ATTENTION_CPU_TILES_H_
