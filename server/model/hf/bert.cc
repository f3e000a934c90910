// BertModel: Hugging Face's BertConfig (transformers' configuration_bert.py
// and modeling_bert.py) onto Favor's config, whose layout and names are
// BERT's already. The fallbacks are BertConfig's own defaults.
#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/model/hf/adapters.h"

namespace favor::model::hf {
namespace {

absl::StatusOr<Activation> ActivationOf(const HfConfig& hf) {
  ASSIGN_OR_RETURN(const std::string act, hf.String("hidden_act", "gelu"));
  // "gelu" is the exact (erf) GELU; "gelu_new" and "gelu_pytorch_tanh" the
  // tanh approximation.
  if (act == "gelu") return Activation::kGelu;
  if (act == "gelu_new" || act == "gelu_pytorch_tanh") {
    return Activation::kGeluTanh;
  }
  if (act == "relu") return Activation::kRelu;
  return hf.Error("hidden_act",
                  absl::StrCat("is \"", act,
                               "\"; Favor runs gelu, gelu_new, "
                               "gelu_pytorch_tanh and relu"));
}

}  // namespace

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
  ASSIGN_OR_RETURN(c.hidden_act, ActivationOf(hf));
  ASSIGN_OR_RETURN(c.layer_norm_eps, hf.Number("layer_norm_eps", 1e-12));
  ASSIGN_OR_RETURN(c.type_vocab_size, hf.Int("type_vocab_size", 2));
  ASSIGN_OR_RETURN(c.max_position_embeddings,
                   hf.Int("max_position_embeddings", 512));
  c.norm = NormType::kLayerNorm;
  c.norm_placement = NormPlacement::kPost;
  c.position_embedding_type = PositionEmbedding::kAbsolute;
  c.position_ids = PositionIds::kFromZero;
  c.block = BlockType::kEncoder;
  // As trained: exact attention over the whole position table.
  c.attention = AttentionConfig();
  c.attention.kernel = attention::Kernel::kSoftmaxExact;
  c.max_sequence_length = c.max_position_embeddings;
  return absl::OkStatus();
}

absl::Status AdaptBert(const HfConfig& hf, ModelConfig* config) {
  RETURN_IF_ERROR(AdaptBertFamily(hf, config));
  ASSIGN_OR_RETURN(config->pad_token_id, hf.Int("pad_token_id", 0));
  return absl::OkStatus();
}

}  // namespace favor::model::hf
