// The Performer encoder's forward pass over a packed batch, on LibTorch
// tensors: embeddings, the configured blocks (encoder, cross-attention,
// ISAB) and the final norm. docs/models.md, "The forward pass", is the
// contract this follows. Implementation detail of server/model: includes
// ATen, not for other modules.
#ifndef FAVOR_SERVER_MODEL_ENCODER_H_
#define FAVOR_SERVER_MODEL_ENCODER_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/attention/attention.h"
#include "server/model/layers.h"
#include "server/model/model_config.h"

namespace favor::model::internal {

// One attention sublayer's weights.
struct AttentionWeights {
  // query | key | value fused into one (H, 3H) layer: self-attention
  // projects all three in one GEMM; cross-attention slices it.
  Linear query_key_value;
  Linear output;          // attention.output.dense
  at::Tensor projection;  // (m, d) float32, or undefined (no projection)
};

// One layer: attention, then feed-forward, each with its norm.
struct LayerWeights {
  AttentionWeights attention;
  Norm attention_norm;  // N1: attention.output.LayerNorm
  // intermediate.dense; gated: intermediate.dense | intermediate.gate, one
  // (H, 2I) product.
  Linear intermediate;
  Linear output;        // output.dense
  Norm output_norm;     // N2: output.LayerNorm
};

struct EncoderWeights {
  at::Tensor word_embeddings;      // (V, H)
  at::Tensor position_embeddings;  // (P, H), or undefined
  at::Tensor token_type_row;       // (H): row 0, added to every token
  Norm embeddings_norm;
  at::Tensor latents;                       // (num_latents, H): cross only
  std::vector<LayerWeights> layers;         // encoder.layer.N
  std::vector<LayerWeights> induced;        // encoder.layer.N.induced: isab
  std::vector<at::Tensor> inducing_points;  // (k, H) per layer: isab
  Norm final_norm;                          // pre-norm only
  at::Tensor pooler_query;                  // (H), or undefined
};

struct EncoderOptions {
  attention::AttentionOptions attention;  // kernel etc. from the config
  int64_t block_tokens = 256;             // rows per ForEachRowBlock block
  bool parallel_blocks = true;            // CPU: threads claim blocks
  // A batch of several sequences and more tokens than this runs as
  // sub-batches of whole sequences of at most this many tokens (a longer
  // sequence alone), each through every layer before the next, side by
  // side on the threads when there are enough; 0: the whole batch layer by
  // layer. Self-attention blocks only (kEncoder). ModelOptions documents
  // the default.
  int64_t sub_batch_tokens = 0;
  // Bytes of one attention pass's float32 inputs and output (Q, K, V and
  // the result of the heads in the pass): past it, attention runs over
  // groups of heads, one group's projections at a time (at least one head
  // per pass), so that a long input's Q, K and V never exist whole.
  // ModelOptions documents the default.
  int64_t max_attention_pass_bytes = int64_t{1} << 30;
  // Rotary tables of a batch's tokens larger than this are made block by
  // block (RotaryAngles): 64 MiB keeps whole tables up to 256k tokens at
  // d = 64. ModelOptions sets both limits.
  int64_t max_rotary_table_bytes = int64_t{64} << 20;
};

// The attention options the config sets (kernel, causality, ε); sizes
// keep their defaults.
attention::AttentionOptions AttentionOptionsFor(const ModelConfig& config);

// Vectors of a packed batch: `values` (rows, H) and which rows belong to
// which sequence (offsets, one per sequence plus one).
struct PackedVectors {
  at::Tensor values;
  std::vector<int64_t> offsets;
};

// Sees each stage's output during Forward: the embeddings, then every
// layer's (ISAB: each induced-set layer's and each layer's). The tensor is
// overwritten by the next stage: copy what is kept. For tests comparing
// two encoders stage by stage.
using StageObserver = std::function<void(const at::Tensor& values)>;

class Encoder {
 public:
  Encoder(ModelConfig config, EncoderWeights weights, EncoderOptions options);

  const ModelConfig& config() const { return config_; }
  const EncoderWeights& weights() const { return weights_; }

  // Output vectors (one per token; per latent for "cross_attention") of the
  // sequences token_ids[offsets[s], offsets[s + 1]), in the weights' dtype.
  // `token_ids` is an int64 tensor on the weights' device; the input has
  // been validated. Errors from the attention library are returned;
  // LibTorch may throw c10::Error.
  //
  // Precision: the linear layers and the activation run in the weights'
  // dtype (float32 or bfloat16 products, float32 sums); embedding sums,
  // residual sums, norms and attention run in float32 whatever it is, and
  // the vectors between stages are stored in the weights' dtype.
  //
  // A large batch runs in sub-batches (EncoderOptions::sub_batch_tokens),
  // unless `observer` is set: the same vectors, bit for bit.
  absl::StatusOr<PackedVectors> Forward(
      const at::Tensor& token_ids, absl::Span<const int64_t> offsets,
      const StageObserver& observer = nullptr) const;

  // ---- Implementation details follow. ----
 private:
  // A packed batch's tokens: their offsets, positions and rotary tables.
  struct Tokens;

  // Forward of the whole batch, layer by layer; the embeddings (which the
  // layers of a kEncoder block overwrite in place) in `into` when it is
  // given: (tokens, hidden) rows in the weights' dtype.
  absl::StatusOr<PackedVectors> ForwardWhole(
      const at::Tensor& token_ids, absl::Span<const int64_t> offsets,
      const StageObserver& observer, at::Tensor into = at::Tensor()) const;

  Tokens MakeTokens(const at::Tensor& token_ids,
                    absl::Span<const int64_t> offsets) const;
  // The embeddings, into `x` when it is given (else a new tensor).
  at::Tensor Embed(const at::Tensor& token_ids, const Tokens& tokens,
                   at::Tensor x = at::Tensor()) const;
  // The blocks of docs/models.md; cross-attention sets the latents' offsets.
  absl::StatusOr<at::Tensor> RunEncoder(at::Tensor x, const Tokens& tokens,
                                        const StageObserver& observer) const;
  absl::StatusOr<at::Tensor> RunCrossAttention(
      at::Tensor x, const Tokens& tokens, std::vector<int64_t>& latent_offsets,
      const StageObserver& observer) const;
  absl::StatusOr<at::Tensor> RunIsab(at::Tensor x, const Tokens& tokens,
                                     const StageObserver& observer) const;
  // How one layer attends: its rotary angles (null: none, or not
  // self-attention) and its attention options (a local layer's window).
  struct LayerAttention {
    const RotaryAngles* rotary = nullptr;
    const attention::AttentionOptions* options = nullptr;
    // The layer's projection prepared for `options` (null: prepared per
    // call).
    const attention::PreparedProjection* projection = nullptr;
  };
  // The layer `index` of an encoder-block model: global or local.
  LayerAttention AttentionOfLayer(int64_t index, const Tokens& tokens) const;
  // Whether layer `index` is a local layer (config local_attention_window,
  // global_attention_every_n_layers).
  bool IsLocalLayer(int64_t index) const;
  // One layer mapping queries `a` (offsets a_offsets) and keys/values `b`
  // to new query vectors, written over a's storage (returned); b is
  // undefined for self-attention over a. Attention runs over groups of
  // heads when a pass over all of them would exceed
  // max_attention_pass_bytes.
  absl::StatusOr<at::Tensor> Layer(const LayerWeights& layer, at::Tensor a,
                                   absl::Span<const int64_t> a_offsets,
                                   const at::Tensor& b,
                                   absl::Span<const int64_t> b_offsets,
                                   const LayerAttention& how) const;
  // Heads [begin, begin + count) of one attention sublayer.
  struct HeadGroup {
    int64_t begin;
    int64_t count;
  };
  int64_t HeadsPerPass(int64_t query_rows, int64_t key_rows) const;
  // One head group's attention, (a rows, count, d) float32.
  absl::StatusOr<at::Tensor> AttendHeads(const LayerWeights& layer,
                                         const at::Tensor& a,
                                         absl::Span<const int64_t> a_offsets,
                                         const at::Tensor& b,
                                         absl::Span<const int64_t> b_offsets,
                                         const LayerAttention& how,
                                         HeadGroup group) const;
  // Parts [first_part, first_part + num_parts) of query | key | value for
  // one head group, as float32 (rows, num_parts · count · d), norm first in
  // pre-norm; rotary applied to the query and key parts when given angles.
  at::Tensor ProjectHeads(const LayerWeights& layer, const at::Tensor& x,
                          int first_part, int num_parts, HeadGroup group,
                          const RotaryAngles* rotary) const;
  // Attention output projection, residuals, norms and feed-forward,
  // written over a block by block.
  // The feed-forward's activated inner vectors of rows `x`.
  at::Tensor FeedForwardInner(const LayerWeights& layer,
                              const at::Tensor& x) const;
  void FinishLayer(const LayerWeights& layer, at::Tensor& a,
                   const at::Tensor& attended) const;
  // One copy of `points` (n, H) per sequence, and the copies' offsets.
  at::Tensor Repeat(const at::Tensor& points, int64_t sequences,
                    std::vector<int64_t>& offsets) const;
  // x = norm(x), block by block, in float32.
  void ApplyNormInPlace(const Norm& norm, at::Tensor& x) const;
  // x in the weights' dtype (no copy when it already is).
  at::Tensor ToCompute(const at::Tensor& x) const;
  // The dtype of the Q, K and V that layers with input like x attend over.
  static at::ScalarType AttentionDType(const at::Tensor& x);
  template <typename Fn>
  void Blocks(int64_t rows, Fn&& fn) const {
    ForEachRowBlock(rows, options_.block_tokens, options_.parallel_blocks, fn);
  }

  ModelConfig config_;
  EncoderWeights weights_;
  EncoderOptions options_;
  // The attention of local layers (config local_attention_window).
  attention::AttentionOptions local_attention_;
  // Rotary models: cos and sin of positions [0, kRotaryTablePositions) for
  // the global and the local layers' bases, made once: a batch's tables
  // are gathered from them rather than computed (sin and cos in double
  // cost short sequences 0.3% of an Embed).
  static constexpr int64_t kRotaryTablePositions = 2048;
  RotaryTables rotary_positions_, local_rotary_positions_;
  // Encoder-block models: each layer's projection prepared once for its
  // attention options (AttentionOfLayer); empty where that failed, and the
  // call then reports the error.
  std::vector<attention::PreparedProjection> prepared_projections_;
};

}  // namespace favor::model::internal

#endif  // FAVOR_SERVER_MODEL_ENCODER_H_
