// Multi-head attention with every kernel of kernel.h, on LibTorch tensors.
//
// Two layouts:
//  - Attend: dense batches, Q (B, H, Lq, d), K (B, H, Lk, d), V (B, H, Lk, dv),
//    as the Attend RPC carries them, with an optional key padding mask.
//  - AttendPacked: variable-length sequences concatenated along the token
//    axis, Q (Tq, H, d), K (Tk, H, d), V (Tk, H, dv), with offsets; this is
//    what the encoder produces, and nothing is padded.
//
// Linear kernels never form an L×L matrix: non-causal attention is two passes
// over the sequence in chunks (key sums, then queries); causal attention keeps
// a running prefix state and does the exact masked product only inside a
// chunk. Extra memory is O(chunk·m + m·dv) per head being computed, whatever
// L is. Every sum and every stabilising max is per sequence and head, so a
// result never depends on what it is batched with.
//
// Devices and precision: any device LibTorch has; inputs float32, float16 or
// bfloat16 (all arithmetic and accumulation in float32, the output in the
// input dtype). On CPU the FAVOR+ and FAVOR++ path uses fused loops and runs
// (sequence, head, chunk-range) tasks in parallel on at::get_num_threads()
// threads; call ConfigureCpuParallelism (parallelism.h) once at start-up.
//
// Errors are returned, never thrown: INVALID_ARGUMENT names the argument and
// the expected shape, dtype or device.
#ifndef FAVOR_SERVER_ATTENTION_ATTENTION_H_
#define FAVOR_SERVER_ATTENTION_ATTENTION_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/attention/kernel.h"

namespace at {
class Tensor;
}  // namespace at
namespace c10 {
struct Device;
}  // namespace c10

namespace favor::attention {

struct AttentionOptions {
  Kernel kernel = Kernel::kFavorPositive;
  // Token i attends only to keys j ≤ i (needs as many queries as keys).
  bool causal = false;
  // Sliding-window (local) attention, exact softmax only: token i attends
  // only to keys j with |i − j| ≤ window_radius (ModernBERT's local layers,
  // radius local_attention / 2), in time linear in the length. −1: every
  // key.
  int64_t window_radius = -1;
  // ε added to positive features (FAVOR+, FAVOR++, hyperbolic, ReLU), after the
  // stabilising shift, as the reference implementation does.
  float feature_epsilon = 1e-4f;
  // Tokens per chunk for linear kernels. Extra memory per head is about
  // chunk_tokens·(F + dv) floats for non-causal and
  // causal_chunk_tokens·(F + causal_chunk_tokens) for causal attention.
  int64_t chunk_tokens = 512;
  int64_t causal_chunk_tokens = 128;
  // The same off the CPU (OnDevice), where every chunk is a chain of
  // LibTorch calls, each a kernel launch: with the CPU's chunks the
  // launches are the whole cost (on an H200, FAVOR+ took 0.3 ms a chunk of
  // 512 tokens at every length from 4k to 1M, docs/gpu.md). 64k tokens a
  // chunk costs 4 heads of 256 features about 1 GiB of temporaries; causal
  // chunks cost chunk² more work per chunk.
  int64_t gpu_chunk_tokens = 65536;
  int64_t gpu_causal_chunk_tokens = 1024;
  // Tile sizes of exact softmax attention (scores tile is query × key).
  int64_t exact_query_tile = 128;
  int64_t exact_key_tile = 1024;
  // How sequences are scheduled on the CPU. kPerHead: each (sequence, head)
  // is a task for a thread, on the fused FAVOR+ path where it applies.
  // kBatched: as on every other device, the sequences of a batch are padded
  // into a few groups (padded_batch.h), each one chain of LibTorch calls per
  // chunk, in order on the calling thread (for tests and comparisons).
  enum class CpuSchedule { kPerHead, kBatched };
  CpuSchedule cpu_schedule = CpuSchedule::kPerHead;
  // The softmax kernel on LibTorch's at::scaled_dot_product_attention where
  // it has one (2.x; exact_attention.h says which groups); false: Favor's
  // tiled kernel everywhere (for tests and comparisons).
  bool softmax_on_libtorch = true;
};

class FeatureContext;  // features.h

// A layer's projection made ready once for a kernel and a device: what
// each call would otherwise redo (the float32 copy scaled by d^-1/4 and
// transposed) on one thread while the others wait, 0.5% of a 512-token
// Embed on two cores. Copies share it; it is immutable.
class PreparedProjection {
 public:
  // Empty: calls given it prepare the projection themselves.
  PreparedProjection();
  ~PreparedProjection();
  PreparedProjection(const PreparedProjection&);
  PreparedProjection& operator=(const PreparedProjection&);

  // `projection` as AttendPacked takes it, for heads of `head_dim` on
  // `device`, for `options`' kernel and ε. Empty for kernels that use no
  // projection (exact softmax); the errors AttendPacked would return for
  // the same projection otherwise.
  static absl::StatusOr<PreparedProjection> Create(
      const at::Tensor& projection, int64_t head_dim, const c10::Device& device,
      const AttentionOptions& options);

  bool empty() const { return context_ == nullptr; }
  const FeatureContext* context() const { return context_.get(); }

 private:
  std::shared_ptr<const FeatureContext> context_;
};

// `options` as they apply on `device`: off the CPU, the chunk sizes are
// gpu_chunk_tokens and gpu_causal_chunk_tokens. Attend and AttendPacked
// apply it themselves.
AttentionOptions OnDevice(const AttentionOptions& options,
                          const c10::Device& device);

// Dense batched attention. `projection` is the m×d matrix W (float32, any
// device; see projection.h), required by kernels that use one and ignored by
// the others (pass an undefined tensor). `key_padding_mask`, if defined, is a
// bool (B, Lk) tensor where true marks a padding key that no query attends
// to. A query with no key to attend to gets a zero output. Returns
// (B, H, Lq, dv) in Q's dtype and device.
absl::StatusOr<at::Tensor> Attend(const at::Tensor& query,
                                  const at::Tensor& key,
                                  const at::Tensor& value,
                                  const at::Tensor& projection,
                                  const at::Tensor& key_padding_mask,
                                  const AttentionOptions& options);

// Packed variable-length attention: sequence s owns query tokens
// [query_offsets[s], query_offsets[s+1]) and key tokens [key_offsets[s],
// key_offsets[s+1]). Offsets start at 0, never decrease and end at the token
// count; both lists have one entry per sequence plus one. Returns
// (Tq, H, dv).
// `prepared`, if given and not empty, is `projection` made ready by
// PreparedProjection::Create for the same kernel, ε, head size and device
// (INVALID_ARGUMENT otherwise); the call then does not prepare it again.
absl::StatusOr<at::Tensor> AttendPacked(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
    absl::Span<const int64_t> query_offsets,
    absl::Span<const int64_t> key_offsets, const at::Tensor& projection,
    const AttentionOptions& options,
    const PreparedProjection* prepared = nullptr);

}  // namespace favor::attention

#endif  // FAVOR_SERVER_ATTENTION_ATTENTION_H_
