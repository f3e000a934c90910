// ModernBertModel (transformers' modeling_modernbert.py and
// configuration_modernbert.py) onto Favor's blocks: token embeddings and a
// LayerNorm; pre-norm layers (layer 0's attention norm the identity), one
// fused Wqkv, rotary positions in rotate-half form with a global and a
// local base, local layers attending to the keys within local_attention / 2
// positions (every layer whose index is not a multiple of
// global_attn_every_n_layers), a GeGLU feed-forward Wo(act(x·Wi₁) ⊙ x·Wi₂)
// from one fused Wi, a final norm; no biases by default. The fallbacks are
// ModernBertConfig's defaults.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/model/hf/adapters.h"

namespace favor::model::hf {
namespace {

// rope_parameters[layer_type] (transformers' current spelling), else the
// older global_rope_theta / local_rope_theta fields.
absl::StatusOr<double> RopeTheta(const HfConfig& hf,
                                 absl::string_view layer_type,
                                 absl::string_view legacy_key,
                                 double fallback) {
  RETURN_IF_ERROR(hf.ExpectOneOf("rope_scaling", {},
                                 "rotary with a fixed base (no scaling)"));
  ASSIGN_OR_RETURN(const std::optional<HfConfig> rope,
                   hf.Object("rope_parameters"));
  if (rope.has_value()) {
    ASSIGN_OR_RETURN(const std::optional<HfConfig> kind,
                     rope->Object(layer_type));
    if (kind.has_value()) {
      RETURN_IF_ERROR(kind->ExpectOneOf("rope_type", {"default"},
                                        "rotary with a fixed base"));
      if (kind->Has("rope_theta")) return kind->Number("rope_theta", fallback);
    }
  }
  return hf.Number(legacy_key, fallback);
}

// layer_types, where given, must be the pattern Favor runs: layer l full
// attention exactly when l is a multiple of global_attn_every_n_layers.
absl::Status CheckLayerTypes(const HfConfig& hf, const ModelConfig& c) {
  ASSIGN_OR_RETURN(const std::vector<std::string> types,
                   hf.Strings("layer_types"));
  if (types.empty()) return absl::OkStatus();
  if (static_cast<int64_t>(types.size()) != c.num_hidden_layers) {
    return hf.Error("layer_types", "does not list every layer");
  }
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const bool global = l % c.global_attention_every_n_layers == 0;
    if (types[l] != (global ? "full_attention" : "sliding_attention")) {
      return hf.Error("layer_types",
                      absl::StrCat("says \"", types[l], "\" for layer ", l,
                                   "; Favor runs full attention every ",
                                   c.global_attention_every_n_layers,
                                   " layers from layer 0, sliding between"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status AdaptModernBert(const HfConfig& hf, ModelConfig* config) {
  ModelConfig& c = *config;
  ASSIGN_OR_RETURN(c.vocab_size, hf.Int("vocab_size", 50368));
  ASSIGN_OR_RETURN(c.hidden_size, hf.Int("hidden_size", 768));
  ASSIGN_OR_RETURN(c.num_hidden_layers, hf.Int("num_hidden_layers", 22));
  ASSIGN_OR_RETURN(c.num_attention_heads, hf.Int("num_attention_heads", 12));
  ASSIGN_OR_RETURN(c.intermediate_size, hf.Int("intermediate_size", 1152));
  ASSIGN_OR_RETURN(c.hidden_act,
                   ActivationNamed(hf, "hidden_activation", "gelu"));
  ASSIGN_OR_RETURN(c.layer_norm_eps, hf.Number("norm_eps", 1e-5));
  ASSIGN_OR_RETURN(c.norm_bias, hf.Bool("norm_bias", false));
  ASSIGN_OR_RETURN(const bool attention_bias, hf.Bool("attention_bias", false));
  ASSIGN_OR_RETURN(const bool mlp_bias, hf.Bool("mlp_bias", false));
  if (attention_bias != mlp_bias) {
    return hf.Error("attention_bias",
                    "differs from mlp_bias; Favor runs biases in all linear "
                    "layers or in none");
  }
  c.linear_bias = attention_bias;
  ASSIGN_OR_RETURN(c.pad_token_id, hf.Int("pad_token_id", 50283));
  c.type_vocab_size = 0;
  c.feed_forward = FeedForward::kGated;
  c.norm = NormType::kLayerNorm;
  c.norm_placement = NormPlacement::kPre;
  c.first_layer_attention_norm = false;
  c.position_embedding_type = PositionEmbedding::kRotary;
  c.position_ids = PositionIds::kFromZero;
  ASSIGN_OR_RETURN(c.rotary_base, RopeTheta(hf, "full_attention",
                                            "global_rope_theta", 160000.0));
  ASSIGN_OR_RETURN(c.local_rotary_base, RopeTheta(hf, "sliding_attention",
                                                  "local_rope_theta", 10000.0));
  ASSIGN_OR_RETURN(c.local_attention_window, hf.Int("local_attention", 128));
  ASSIGN_OR_RETURN(c.global_attention_every_n_layers,
                   hf.Int("global_attn_every_n_layers", 3));
  if (c.global_attention_every_n_layers < 1) {
    return hf.Error("global_attn_every_n_layers", "must be at least 1");
  }
  RETURN_IF_ERROR(CheckLayerTypes(hf, c));
  ASSIGN_OR_RETURN(c.max_position_embeddings,
                   hf.Int("max_position_embeddings", 8192));
  // As trained: up to its context length, exact attention.
  c.max_sequence_length = c.max_position_embeddings;
  RunAsTrained(config);
  return absl::OkStatus();
}

std::vector<TensorAlias> ModernBertAliases(const ModelConfig& config) {
  std::vector<TensorAlias> aliases = {
      {"embeddings.word_embeddings.weight", "embeddings.tok_embeddings.weight"},
      {"embeddings.LayerNorm.weight", "embeddings.norm.weight"},
      {"encoder.final_norm.weight", "final_norm.weight"}};
  std::vector<std::string> norm_kinds = {".weight"};
  if (config.norm_bias) {
    norm_kinds.push_back(".bias");
    aliases.push_back({"embeddings.LayerNorm.bias", "embeddings.norm.bias"});
    aliases.push_back({"encoder.final_norm.bias", "final_norm.bias"});
  }
  std::vector<std::string> linear_kinds = {".weight"};
  if (config.linear_bias) linear_kinds.push_back(".bias");
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    const std::string from = absl::StrCat("layers.", i, ".");
    const std::string to = absl::StrCat("encoder.layer.", i, ".");
    for (const std::string& kind : linear_kinds) {
      AddFusedQueryKeyValue(from + "attn.Wqkv", to, kind, &aliases);
      aliases.push_back(
          {to + "attention.output.dense" + kind, from + "attn.Wo" + kind});
      // Wi's first half is activated, its second the gate.
      aliases.push_back(
          {to + "intermediate.dense" + kind, from + "mlp.Wi" + kind, 0, 2});
      aliases.push_back(
          {to + "intermediate.gate" + kind, from + "mlp.Wi" + kind, 1, 2});
      aliases.push_back({to + "output.dense" + kind, from + "mlp.Wo" + kind});
    }
    for (const std::string& kind : norm_kinds) {
      if (i > 0) {  // layer 0's attention norm is the identity
        aliases.push_back({to + "attention.output.LayerNorm" + kind,
                           from + "attn_norm" + kind});
      }
      aliases.push_back(
          {to + "output.LayerNorm" + kind, from + "mlp_norm" + kind});
    }
  }
  return aliases;
}

}  // namespace favor::model::hf
