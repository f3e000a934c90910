// The per-token building blocks of the encoder: linear layers, norms,
// activations, rotary embeddings, and the row-block loop they run in.
// Implementation detail of server/model: includes ATen, not for other
// modules.
#ifndef FAVOR_SERVER_MODEL_LAYERS_H_
#define FAVOR_SERVER_MODEL_LAYERS_H_

#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <utility>

#include "server/attention/cpu_gemm.h"
#include "server/model/model_config.h"

namespace favor::model::internal {

// fn(i) for every i in [0, n) on the intra-op threads, each thread taking
// the next index when it finishes one (a thread slowed by another process
// does not hold back the rest, as a static split would). OpenMP workers do
// not inherit the caller's thread-local state, among it c10::InferenceMode
// (without it they may not write inference tensors): it travels with them.
template <typename Fn>
void ForEachClaimed(int64_t n, Fn&& fn) {
  const at::ThreadLocalState caller_state;
  std::atomic<int64_t> next{0};
  const int64_t workers =
      std::min<int64_t>(n, static_cast<int64_t>(at::get_num_threads()));
  at::parallel_for(0, workers, 1, [&](int64_t, int64_t) {
    const at::ThreadLocalStateGuard guard(caller_state);
    for (int64_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) fn(i);
  });
}

// Runs fn(begin, end) over [0, rows) in blocks of `block_rows`. On CPU
// (`parallel`), the intra-op threads claim blocks one at a time: BLAS is
// single-threaded in Favor (server/attention/parallelism.h), so a big GEMM
// over all tokens would run on one core, while whole blocks per thread use
// every core at near single-thread sgemm speed and keep each block's
// intermediates in cache. Elsewhere blocks run in order on the caller's
// thread (a GPU parallelises inside each op). fn may throw; at::parallel_for
// rethrows the first exception on the caller's thread. A batch of fewer
// than block_rows per thread is cut smaller, so that every thread has rows
// (no fewer than kMinParallelBlockRows a block): a lone 200-token request
// would otherwise run on one core of many. A row's result does not depend
// on its block (kMinProductRows), so neither do the outputs.
inline constexpr int64_t kMinParallelBlockRows = 32;

template <typename Fn>
void ForEachRowBlock(int64_t rows, int64_t block_rows, bool parallel, Fn&& fn) {
  block_rows = std::max<int64_t>(1, block_rows);
  const bool threads = parallel && !at::in_parallel_region();
  if (threads && rows < block_rows * at::get_num_threads()) {
    const int64_t per_thread =
        (rows + at::get_num_threads() - 1) / at::get_num_threads();
    block_rows =
        std::min(block_rows, std::max(kMinParallelBlockRows, per_thread));
  }
  const int64_t blocks = (rows + block_rows - 1) / block_rows;
  auto run_block = [&](int64_t b) {
    fn(b * block_rows, std::min(rows, (b + 1) * block_rows));
  };
  if (!threads || blocks <= 1) {
    for (int64_t b = 0; b < blocks; ++b) run_block(b);
    return;
  }
  ForEachClaimed(blocks, run_block);
}

// y = x Wᵀ + b (PyTorch's nn.Linear), with W stored transposed so that the
// product is one GEMM without a transpose. In float32 on a CPU with
// cpu::Gemm's register tiles (AVX-512, or AVX2 with FMA) it runs there, the
// bias added as the sums start, and each row's result is the same bits in
// any block; elsewhere on LibTorch (the BLAS, oneDNN, CUDA).
//
// A layer loaded for such a CPU also keeps its weight packed for the tiles
// (PackForTiles: cpu::PackB, once at load), which they read as contiguous
// panels; a product runs on the packed copy whenever the kernel that Gemm
// runs is the one it was packed for, with the same bits as unpacked.
struct Linear {
  Linear() = default;
  Linear(at::Tensor weight_t_in, at::Tensor bias_in)
      : weight_t(std::move(weight_t_in)), bias(std::move(bias_in)) {}

  at::Tensor weight_t;  // (in, out); may be a column slice of a wider matrix
  at::Tensor bias;      // (out)
  // weight_t packed by cpu::PackB for `packed_for`; undefined if not packed.
  at::Tensor packed;
  attention::cpu::GemmKernel packed_for = attention::cpu::GemmKernel::kPortable;
  // ComputeDType kInt8: weight_t quantised by cpu::QuantizeWeightInt8
  // (int8 bytes, float scales and int32 column sums, per output column);
  // undefined otherwise. A float32 product on the CPU then runs in int8
  // (cpu::GemmInt8, its rows quantised as it runs).
  at::Tensor int8_weight;
  at::Tensor int8_scales;
  at::Tensor int8_column_sums;

  // Packs weight_t for the kernel that cpu::Gemm runs now, if it has tiles
  // and weight_t is float32 on the CPU; otherwise leaves the layer as it is.
  void PackForTiles();
  // Quantises weight_t for cpu::GemmInt8 (float32 on the CPU only; else
  // leaves the layer as it is). Products then run in int8, not on `packed`.
  void QuantizeInt8();
  // The layer restricted to output features [begin, begin + count): a view,
  // no copy (the fused query|key|value layer is sliced this way); packed
  // and quantised too where `begin` starts a panel.
  Linear Columns(int64_t begin, int64_t count) const;
  at::Tensor operator()(const at::Tensor& x) const;
  // The same product written into `out` (x's rows, out features).
  void Into(const at::Tensor& x, at::Tensor& out) const;
  // out += x Wᵀ + b: a residual sum in place, in one pass on cpu::Gemm
  // (the residual is where the sums start).
  void AddInto(const at::Tensor& x, at::Tensor& out) const;
  // activation(x Wᵀ + b). On the AVX-512 tiles a GELU (erf form) is applied
  // to the sums as they are stored (cpu::Epilogue::kGelu), which saves the
  // activation's own pass; otherwise the product, then ActivateInPlace.
  at::Tensor Activated(const at::Tensor& x, Activation activation) const;
};

// Fewest rows a product on the BLAS is computed with. Below 4 rows LibTorch's
// BLAS
// takes other kernels, which sum in another order, so a row's result
// would depend on how many rows share its block (a short sequence alone
// or packed with others, a block's tail): fewer rows are computed as the
// first rows of a zero-padded block of 4, whose rows are bit for bit
// those of any larger block.
inline constexpr int64_t kMinProductRows = 4;

// LayerNorm or ScaleNorm over the last dimension (docs/models.md, Norms).
struct Norm {
  NormType type = NormType::kLayerNorm;
  at::Tensor weight;  // LayerNorm (H)
  at::Tensor bias;    // LayerNorm (H)
  at::Tensor scale;   // ScaleNorm (1)
  double eps = 1e-12;

  // No weights at all: the identity (first_layer_attention_norm false).
  bool identity() const { return !weight.defined() && !scale.defined(); }

  at::Tensor operator()(const at::Tensor& x) const;
  // x = norm(x), in one pass per row for float32 LayerNorm on the CPU
  // (row_kernels.h).
  void InPlace(at::Tensor& x) const;
};

// The feed-forward activation, in place on `x` (a fresh intermediate).
void ActivateInPlace(Activation activation, at::Tensor& x);

// A gated feed-forward's inner vectors: act(first half) ⊙ second half of
// `inner`'s columns (the fused x·[W1 | Wg] product), a new tensor.
at::Tensor GatedActivation(Activation activation, const at::Tensor& inner);

// cos and sin of every token's rotary angles, (tokens, d/2) float32 tables:
// angle (t, i) = position_t · base^(−2i/d). Angles are formed in double
// precision, because a float32 product p · θ_i loses the angle's fractional
// part at the long lengths rotary models accept.
struct RotaryTables {
  at::Tensor cos;
  at::Tensor sin;
};
RotaryTables MakeRotaryTables(const at::Tensor& positions, int64_t head_dim,
                              double base);

// The rotary tables of a packed batch's tokens, row block by row block.
// Whole tables cost 4·d bytes per token (256 MiB for a 1M-token input at
// d = 64); past max_table_bytes, a block's rows are made when asked, from
// two small tables of angle parts: position p = hi·S + lo (S = ⌈√(P + 1)⌉
// for positions up to P), cos(pθ) = cos(loθ)·cos(hiSθ) − sin(loθ)·sin(hiSθ)
// and likewise the sine, in double precision, so that the float32 rows
// equal the whole tables' but in rare last-bit ties.
class RotaryAngles {
 public:
  RotaryAngles() = default;
  // `positions`: (T) int64, every token's position. `first_positions`, if
  // given: MakeRotaryTables of positions [0, N) with the same head_dim and
  // base, made once (Encoder); when every position is below N, the rows
  // are gathered from it (the same bits) instead of computed.
  RotaryAngles(const at::Tensor& positions, int64_t head_dim, double base,
               int64_t max_table_bytes,
               const RotaryTables* first_positions = nullptr);

  // cos and sin of rows [begin, begin + count), (count, d/2) float32.
  RotaryTables Rows(int64_t begin, int64_t count) const;

 private:
  RotaryTables whole_;  // when within max_table_bytes
  at::Tensor positions_;
  int64_t stride_ = 1;                                  // S
  at::Tensor low_cos_, low_sin_, high_cos_, high_sin_;  // double, (·, d/2)
};

// Rotates the heads of x (rows, heads, d), a view written in place, by the
// rows' angles (`cos`, `sin` rows matching x's rows), rotate-half
// convention: feature pairs (i, i + d/2).
void ApplyRotaryInPlace(at::Tensor x, const at::Tensor& cos,
                        const at::Tensor& sin);

}  // namespace favor::model::internal

#endif  // FAVOR_SERVER_MODEL_LAYERS_H_
