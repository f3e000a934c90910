// The adapters of hf_architecture.cc's table, one file each. Implementation
// detail of server/model/hf.
#ifndef FAVOR_SERVER_MODEL_HF_ADAPTERS_H_
#define FAVOR_SERVER_MODEL_HF_ADAPTERS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/model/hf/hf_config.h"
#include "server/model/model_config.h"
#include "server/model/safetensors.h"

namespace favor::model::hf {

// BertModel (bert.cc).
absl::Status AdaptBert(const HfConfig& hf, ModelConfig* config);
// RobertaModel and XLMRobertaModel (roberta.cc): BERT's layers, positions
// numbered after the padding id.
absl::Status AdaptRoberta(const HfConfig& hf, ModelConfig* config);

// NomicBertModel (nomic_bert.cc): rotary, gated feed-forward, no biases;
// its tensors renamed onto BERT's, the fused Wqkv split.
absl::Status AdaptNomicBert(const HfConfig& hf, ModelConfig* config);
std::vector<TensorAlias> NomicBertAliases(const ModelConfig& config);

// ModernBertModel (modernbert.cc): pre-norm without biases, GeGLU, rotary
// with a global and a local base, local layers with a sliding window.
absl::Status AdaptModernBert(const HfConfig& hf, ModelConfig* config);
std::vector<TensorAlias> ModernBertAliases(const ModelConfig& config);

// What the adapters share (adapter_parts.cc).
// `key`'s activation as transformers' ACT2FN names it.
absl::StatusOr<Activation> ActivationNamed(const HfConfig& hf,
                                           absl::string_view key,
                                           absl::string_view fallback);
// As trained: encoder blocks, exact softmax attention.
void RunAsTrained(ModelConfig* config);
// Layer `layer`'s ("encoder.layer.3.") query, key and value `kind`
// (".weight", ".bias") as the three blocks of rows of `fused`.
void AddFusedQueryKeyValue(const std::string& fused, const std::string& layer,
                           const std::string& kind,
                           std::vector<TensorAlias>* aliases);

// What BERT and its descendants share (bert.cc): the shape, activation,
// LayerNorm ε, post-norm, learned absolute positions, the token type table,
// the padding id; exact attention up to max_position_embeddings.
absl::Status AdaptBertFamily(const HfConfig& hf, ModelConfig* config);

}  // namespace favor::model::hf

#endif  // FAVOR_SERVER_MODEL_HF_ADAPTERS_H_
