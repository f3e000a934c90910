// The checkpoint's layout, written once: which tensors model.safetensors
// holds for a config, their names (Hugging Face BertModel's, extended as
// docs/models.md lists), shapes, whether each is required, and which part of
// the encoder each one is.
//
// ExpectedWeights (what CheckTensors compares a file with) and the loader
// (encoder_weights.cc) are both walks of this one layout, so a new tensor is
// one entry in VisitWeightLayout plus, when it is a new part of the encoder,
// one visitor method; the loader fails with INTERNAL when it did not read
// exactly the tensors the layout lists.
//
// No LibTorch: tools list and check weights without it.
#ifndef FAVOR_SERVER_MODEL_WEIGHT_LAYOUT_H_
#define FAVOR_SERVER_MODEL_WEIGHT_LAYOUT_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "server/model/model_config.h"
#include "server/model/safetensors.h"

namespace favor::model {

// A dense layer: weight [out, in] and bias [out] (none without
// linear_bias).
struct LinearTensors {
  ExpectedTensor weight;
  std::optional<ExpectedTensor> bias;
};

// A norm: LayerNorm's weight and bias [H] (no bias without norm_bias), or
// ScaleNorm's scale [1].
struct NormTensors {
  std::optional<ExpectedTensor> weight;
  std::optional<ExpectedTensor> bias;
  std::optional<ExpectedTensor> scale;
};

// One attention sublayer.
struct AttentionTensors {
  LinearTensors query;
  LinearTensors key;
  LinearTensors value;
  // [m, d], kernels with a projection only; optional in the file.
  std::optional<ExpectedTensor> projection;
  LinearTensors output;
  // The sublayer's index in forward order, counted from 0: a projection the
  // file lacks is drawn with seed projection_seed + sublayer.
  uint64_t sublayer = 0;
};

// One BERT-structured layer: attention, then feed-forward, each with a norm.
struct LayerTensors {
  AttentionTensors attention;
  NormTensors attention_norm;  // N1
  LinearTensors intermediate;
  // Gated feed-forward only: Wg, multiplied with act(intermediate).
  std::optional<LinearTensors> gate;
  LinearTensors output;
  NormTensors output_norm;  // N2
};

// How a checkpoint spells the layout's names. Favor's own names are
// BertModel's; a Hugging Face task model's file holds them under a prefix
// ("bert.", "roberta."), beside tensors Favor does not run (task heads,
// buffers such as "embeddings.position_ids").
struct WeightNaming {
  // Put before every name of the layout.
  std::string prefix;
  // A tensor of the file that the layout does not list is an error
  // (CheckTensors) unless this accepts its name; null: none is ignored.
  std::function<bool(absl::string_view name)> ignore;
};

// Receives the layout's parts in order. Each method says what a part is;
// the loader puts it in its place in the encoder.
class WeightLayoutVisitor {
 public:
  virtual ~WeightLayoutVisitor() = default;

  virtual void WordEmbeddings(const ExpectedTensor& tensor) = 0;
  // Absolute positions only.
  virtual void PositionEmbeddings(const ExpectedTensor& tensor) = 0;
  // Optional; only when type_vocab_size > 0. Row 0 is added to every token.
  virtual void TokenTypeEmbeddings(const ExpectedTensor& tensor) = 0;
  virtual void EmbeddingsNorm(const NormTensors& norm) = 0;
  // Cross-attention only.
  virtual void Latents(const ExpectedTensor& tensor) = 0;
  // ISAB only: layer N's inducing points and induced layer, before Layer.
  virtual void InducingPoints(const ExpectedTensor& tensor) = 0;
  virtual void InducedLayer(const LayerTensors& layer) = 0;
  // Layers 0 … L−1, in order.
  virtual void Layer(const LayerTensors& layer) = 0;
  // Pre-norm only.
  virtual void FinalNorm(const NormTensors& norm) = 0;
  // Required with attention pooling, optional otherwise.
  virtual void PoolerQuery(const ExpectedTensor& tensor) = 0;
  // Accepted in a file, never used: BERT's tanh pooler.
  virtual void Unused(const ExpectedTensor& tensor) = 0;
};

// Hands the parts of a model with `config` (validated) to `visitor` and
// returns all their tensors, in the order ExpectedWeights lists them.
std::vector<ExpectedTensor> VisitWeightLayout(const ModelConfig& config,
                                              const WeightNaming& naming,
                                              WeightLayoutVisitor& visitor);

// The weights a model with this config has, with their shapes (names as
// docs/models.md lists them), for CheckTensors. Optional tensors (stored
// projections, token type embeddings, BERT's pooler) are marked so.
std::vector<ExpectedTensor> ExpectedWeights(const ModelConfig& config,
                                            const WeightNaming& naming = {});

}  // namespace favor::model

#endif  // FAVOR_SERVER_MODEL_WEIGHT_LAYOUT_H_
