// BertModel: Hugging Face's BertConfig (transformers' configuration_bert.py
// and modeling_bert.py) onto Favor's config, whose layout and names are
// BERT's already. The fallbacks are BertConfig's own defaults.
#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/model/hf/adapters.h"

namespace favor::model::hf {

absl::Status AdaptBertFamily(const HfConfig& hf, ModelConfig* config) {
  RETURN_IF_ERROR(hf.ExpectOneOf("position_embedding_type", {"absolute"},
                                 "learned absolute positions"));
  RETURN_IF_ERROR(hf.ExpectOneOf("is_decoder", {false}, "encoders"));
  RETURN_IF_ERROR(
      hf.ExpectOneOf("add_cross_attention", {false}, "self-attention only"));
  ModelConfig& c = *config;
  ASSIGN_OR_RETURN(c.vocab_size, hf.Int("vocab_size", 30522));
  ASSIGN_OR_RETURN(c.hidden_size, hf.Int("hidden_size", 768));
  ASSIGN_OR_RETURN(c.num_hidden_layers, hf.Int("num_hidden_layers", 12));
  ASSIGN_OR_RETURN(c.num_attention_heads, hf.Int("num_attention_heads", 12));
  ASSIGN_OR_RETURN(c.intermediate_size, hf.Int("intermediate_size", 3072));
  ASSIGN_OR_RETURN(c.hidden_act, ActivationNamed(hf, "hidden_act", "gelu"));
  ASSIGN_OR_RETURN(c.layer_norm_eps, hf.Number("layer_norm_eps", 1e-12));
  ASSIGN_OR_RETURN(c.type_vocab_size, hf.Int("type_vocab_size", 2));
  ASSIGN_OR_RETURN(c.max_position_embeddings,
                   hf.Int("max_position_embeddings", 512));
  c.norm = NormType::kLayerNorm;
  c.norm_placement = NormPlacement::kPost;
  c.position_embedding_type = PositionEmbedding::kAbsolute;
  c.position_ids = PositionIds::kFromZero;
  // As trained: exact attention over the whole position table.
  RunAsTrained(config);
  c.max_sequence_length = c.max_position_embeddings;
  return absl::OkStatus();
}

absl::Status AdaptBert(const HfConfig& hf, ModelConfig* config) {
  RETURN_IF_ERROR(AdaptBertFamily(hf, config));
  ASSIGN_OR_RETURN(config->pad_token_id, hf.Int("pad_token_id", 0));
  return absl::OkStatus();
}

}  // namespace favor::model::hf
