// NomicBertModel (nomic-ai's modeling_hf_nomic_bert.py, the code the hub's
// nomic-embed-text and snowflake-arctic-embed-m-long folders load with
// trust_remote_code) onto Favor's blocks. Its config is GPT-2's
// (n_embd, n_head, n_layer, n_inner, layer_norm_epsilon,
// activation_function) plus NomicBertConfig's fields; the fallbacks are
// those classes' defaults. The layers are BERT's (post-norm, embeddings
// norm emb_ln) with rotary positions on the whole head in GPT-NeoX's
// rotate-half form, one fused Wqkv, and a gated feed-forward
// fc2(fc11(x) · act(fc12(x))).
#include <string>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/model/hf/adapters.h"

namespace favor::model::hf {
namespace {

// activation_function: the feed-forward's form and activation.
absl::Status AdaptFeedForward(const HfConfig& hf, ModelConfig* config) {
  ASSIGN_OR_RETURN(const std::string act,
                   hf.String("activation_function", "gelu_new"));
  config->feed_forward = FeedForward::kDense;
  if (act == "swiglu" || act == "geglu") {
    config->feed_forward = FeedForward::kGated;
    config->hidden_act = act == "swiglu" ? Activation::kSilu : Activation::kGelu;
  } else {
    ASSIGN_OR_RETURN(config->hidden_act,
                     ActivationNamed(hf, "activation_function", "gelu_new"));
  }
  // n_inner unset: NomicBertMLP's 4·n_embd, or the gated MLP's 8·n_embd/3
  // rounded up to a multiple of 256.
  const int64_t hidden = config->hidden_size;
  int64_t fallback = 4 * hidden;
  if (config->feed_forward == FeedForward::kGated) {
    fallback = (8 * hidden / 3 + 255) / 256 * 256;
  }
  ASSIGN_OR_RETURN(config->intermediate_size, hf.Int("n_inner", fallback));
  return absl::OkStatus();
}

// One bias switch for every linear layer: the three of the file agree.
absl::Status AdaptBiases(const HfConfig& hf, ModelConfig* config) {
  ASSIGN_OR_RETURN(const bool qkv, hf.Bool("qkv_proj_bias", true));
  ASSIGN_OR_RETURN(const bool fc1, hf.Bool("mlp_fc1_bias", true));
  ASSIGN_OR_RETURN(const bool fc2, hf.Bool("mlp_fc2_bias", true));
  if (qkv != fc1 || qkv != fc2) {
    return hf.Error("qkv_proj_bias",
                    "mlp_fc1_bias and mlp_fc2_bias differ; Favor runs "
                    "biases in all linear layers or in none");
  }
  config->linear_bias = qkv;
  return absl::OkStatus();
}

// Rotary on the whole head (rotary_emb_fraction 1), or a learned table
// (fraction 0); the fixed base only (no scale_base, no dynamic NTK).
absl::Status AdaptPositions(const HfConfig& hf, ModelConfig* config) {
  ASSIGN_OR_RETURN(const double fraction, hf.Number("rotary_emb_fraction", 0));
  RETURN_IF_ERROR(hf.ExpectOneOf("rotary_emb_interleaved", {false},
                                 "rotate-half (GPT-NeoX) rotary"));
  RETURN_IF_ERROR(hf.ExpectOneOf("rotary_emb_scale_base", {},
                                 "rotary without xPos scaling"));
  RETURN_IF_ERROR(hf.ExpectOneOf("rotary_scaling_factor", {},
                                 "rotary with a fixed base (dynamic NTK "
                                 "scaling is not implemented)"));
  ASSIGN_OR_RETURN(const int64_t table, hf.Int("n_positions", 1024));
  if (fraction == 1) {
    config->position_embedding_type = PositionEmbedding::kRotary;
    ASSIGN_OR_RETURN(config->rotary_base, hf.Number("rotary_emb_base", 10000));
    config->max_position_embeddings = table;
    // As trained: up to the length it was trained at.
    ASSIGN_OR_RETURN(config->max_sequence_length,
                     hf.Int("max_trained_positions", 2048));
  } else if (fraction == 0) {
    config->position_embedding_type = PositionEmbedding::kAbsolute;
    config->max_position_embeddings = table;
    config->max_sequence_length = table;
  } else {
    return hf.Error("rotary_emb_fraction",
                    "is neither 0 nor 1; Favor rotates whole heads");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status AdaptNomicBert(const HfConfig& hf, ModelConfig* config) {
  RETURN_IF_ERROR(hf.ExpectOneOf("prenorm", {false}, "post-norm layers"));
  RETURN_IF_ERROR(
      hf.ExpectOneOf("parallel_block", {false}, "sequential blocks"));
  RETURN_IF_ERROR(hf.ExpectOneOf("use_rms_norm", {false}, "LayerNorm"));
  RETURN_IF_ERROR(hf.ExpectOneOf("causal", {false}, "bidirectional encoders"));
  ModelConfig& c = *config;
  ASSIGN_OR_RETURN(c.hidden_size, hf.Int("n_embd", 768));
  ASSIGN_OR_RETURN(c.num_hidden_layers, hf.Int("n_layer", 12));
  ASSIGN_OR_RETURN(c.num_attention_heads, hf.Int("n_head", 12));
  ASSIGN_OR_RETURN(c.layer_norm_eps, hf.Number("layer_norm_epsilon", 1e-5));
  ASSIGN_OR_RETURN(c.type_vocab_size, hf.Int("type_vocab_size", 2));
  ASSIGN_OR_RETURN(c.pad_token_id, hf.Int("pad_token_id", 0));
  // NomicBertModel pads the vocabulary to a multiple, and so its table.
  ASSIGN_OR_RETURN(c.vocab_size, hf.Int("vocab_size", 50257));
  ASSIGN_OR_RETURN(const int64_t multiple,
                   hf.Int("pad_vocab_size_multiple", 1));
  if (multiple < 1) {
    return hf.Error("pad_vocab_size_multiple", "must be at least 1");
  }
  c.vocab_size = (c.vocab_size + multiple - 1) / multiple * multiple;
  RETURN_IF_ERROR(AdaptFeedForward(hf, config));
  RETURN_IF_ERROR(AdaptBiases(hf, config));
  RETURN_IF_ERROR(AdaptPositions(hf, config));
  c.norm = NormType::kLayerNorm;
  c.norm_placement = NormPlacement::kPost;
  c.position_ids = PositionIds::kFromZero;
  RunAsTrained(config);
  return absl::OkStatus();
}

std::vector<TensorAlias> NomicBertAliases(const ModelConfig& config) {
  std::vector<TensorAlias> aliases = {
      {"embeddings.LayerNorm.weight", "emb_ln.weight"},
      {"embeddings.LayerNorm.bias", "emb_ln.bias"}};
  const bool gated = config.feed_forward == FeedForward::kGated;
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    const std::string from = absl::StrCat("encoder.layers.", i, ".");
    const std::string to = absl::StrCat("encoder.layer.", i, ".");
    std::vector<std::string> kinds = {".weight"};
    if (config.linear_bias) kinds.push_back(".bias");
    for (const std::string& kind : kinds) {
      AddFusedQueryKeyValue(from + "attn.Wqkv", to, kind, &aliases);
      aliases.push_back({to + "attention.output.dense" + kind,
                         from + "attn.out_proj" + kind});
      // The activated half is fc12 (gated) or fc1.
      aliases.push_back({to + "intermediate.dense" + kind,
                         from + (gated ? "mlp.fc12" : "mlp.fc1") + kind});
      if (gated) {
        aliases.push_back(
            {to + "intermediate.gate" + kind, from + "mlp.fc11" + kind});
      }
      aliases.push_back({to + "output.dense" + kind, from + "mlp.fc2" + kind});
    }
    for (const char* kind : {".weight", ".bias"}) {
      aliases.push_back({to + "attention.output.LayerNorm" + kind,
                         from + "norm1" + kind});
      aliases.push_back({to + "output.LayerNorm" + kind, from + "norm2" + kind});
    }
  }
  return aliases;
}

}  // namespace favor::model::hf
