#include "server/service/model_info.h"

#include <string>

#include "server/attention/kernel.h"
#include "server/model/model_config.h"
#include "server/tokenizer/tokenizer.h"

namespace favor::service {
namespace {

v1::Pooling PoolingOf(model::Pooling pooling) {
  switch (pooling) {
    case model::Pooling::kMean:
      return v1::POOLING_MEAN;
    case model::Pooling::kCls:
      return v1::POOLING_CLS;
    case model::Pooling::kAttention:
      return v1::POOLING_ATTENTION;
    case model::Pooling::kNone:
      return v1::POOLING_NONE;
    case model::Pooling::kMax:
      return v1::POOLING_MAX;
    case model::Pooling::kLastToken:
      return v1::POOLING_LAST_TOKEN;
  }
  return v1::POOLING_UNSPECIFIED;
}

void FillAttention(const model::ModelDescription& model,
                   v1::AttentionConfig* out) {
  const model::AttentionConfig& attention = model.config.attention;
  out->set_kernel(std::string(attention::KernelName(attention.kernel)));
  const bool projected = attention::TraitsOf(attention.kernel).uses_projection;
  out->set_num_random_features(projected ? attention.num_random_features : 0);
  out->set_num_features(model.num_features);
  out->set_random_features(!attention.orthogonal ? v1::RANDOM_FEATURES_IID
                           : attention.simplex
                               ? v1::RANDOM_FEATURES_SIMPLEX
                               : v1::RANDOM_FEATURES_ORTHOGONAL);
  out->set_row_norm(attention.row_norm ==
                            attention::ProjectionOptions::RowNorm::kSqrtDim
                        ? v1::ROW_NORM_SQRT_DIM
                        : v1::ROW_NORM_CHI);
  out->set_projection_seed(attention.projection_seed);
  out->set_causal(attention.causal);
}

// The special tokens the tokenizer frames every text with, in order, each
// with its role: before the text "cls" ("bos" for SentencePiece), after it
// "sep" ("eos").
void FillTokenizer(const model::ModelDescription& model,
                   v1::TokenizerInfo* out) {
  const tokenizer::Tokenizer* tokenizer = model.tokenizer.get();
  if (tokenizer == nullptr) return;
  out->set_kind(std::string(tokenizer->kind()));
  out->set_file(model.config.tokenizer.file);
  const bool wordpiece = tokenizer->kind() == "wordpiece";
  const tokenizer::Framing framing = tokenizer::FramingOf(*tokenizer);
  for (const auto& [tokens, role] :
       {std::pair{&framing.before, wordpiece ? "cls" : "bos"},
        std::pair{&framing.after, wordpiece ? "sep" : "eos"}}) {
    for (const tokenizer::SpecialToken& token : *tokens) {
      v1::SpecialToken* special = out->add_special_tokens();
      special->set_role(role);
      special->set_token(token.content);
      special->set_id(static_cast<uint32_t>(token.id));
    }
  }
}

void FillConfig(const model::ModelDescription& model, v1::ModelConfig* out) {
  const model::ModelConfig& config = model.config;
  out->set_vocab_size(config.vocab_size);
  out->set_hidden_size(config.hidden_size);
  out->set_num_hidden_layers(config.num_hidden_layers);
  out->set_num_attention_heads(config.num_attention_heads);
  FillAttention(model, out->mutable_attention());
  out->set_default_pooling(PoolingOf(config.pooling));
  out->set_default_normalization(config.normalize ? v1::NORMALIZATION_L2
                                                  : v1::NORMALIZATION_NONE);
  out->set_has_attention_pooler(model.has_attention_pooling);
  out->set_pad_token_id(config.pad_token_id);
  out->set_unk_token_id(config.unk_token_id);
  out->set_cls_token_id(config.cls_token_id);
  out->set_sep_token_id(config.sep_token_id);
  out->set_mask_token_id(config.mask_token_id);
  out->set_config_json(model::ModelConfigToJson(config));
  FillTokenizer(model, out->mutable_tokenizer());
  for (const auto& [name, text] : model.prompts) {
    (*out->mutable_prompts())[name] = text;
  }
  out->set_default_prompt_name(model.default_prompt_name);
  out->set_architecture(model.architecture);
}

}  // namespace

v1::ModelInfo DescribeModel(const model::ModelDescription& model,
                            const EmbedLimits& call_limits,
                            const batching::Batcher::Options& batching,
                            bool is_default) {
  v1::ModelInfo info;
  info.set_name(model.name);
  info.set_version(model.config.version);
  info.set_is_default(is_default);
  FillConfig(model, info.mutable_config());
  v1::ModelLimits* limits = info.mutable_limits();
  limits->set_max_tokens_per_input(call_limits.max_tokens_per_input);
  limits->set_max_tokens_per_call(call_limits.max_tokens_per_call);
  limits->set_max_inputs_per_call(call_limits.max_inputs_per_call);
  limits->set_max_tokens_per_batch(batching.max_batch_tokens);
  limits->set_max_requests_per_batch(batching.max_batch_requests);
  limits->set_max_queued_tokens(batching.max_queue_tokens);
  limits->set_max_queued_requests(batching.max_queue_requests);
  limits->set_max_text_bytes_per_call(call_limits.max_text_bytes_per_call);
  limits->set_max_spans_per_input(call_limits.max_spans_per_input);
  info.add_devices(model.device);
  info.set_dtype(std::string(model::NameOf(model.dtype)));
  return info;
}

}  // namespace favor::service
