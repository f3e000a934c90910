// What ListModels and GetModel return: a loaded model's name, architecture
// and limits (favor.v1.ModelInfo, whose comments are the reference for each
// field), as plain types.
#ifndef FAVOR_CLIENT_INCLUDE_FAVOR_MODEL_INFO_H_
#define FAVOR_CLIENT_INCLUDE_FAVOR_MODEL_INFO_H_

#include <cstdint>
#include <string>
#include <vector>

#include "favor/attend.h"
#include "favor/embed.h"

namespace favor {

// The limits the server enforces for one model; a request over one fails
// with INVALID_ARGUMENT (or RESOURCE_EXHAUSTED for the queue limits).
struct ModelLimits {
  int64_t max_tokens_per_input = 0;
  int64_t max_tokens_per_call = 0;
  int64_t max_inputs_per_call = 0;
  int64_t max_tokens_per_batch = 0;
  int64_t max_requests_per_batch = 0;
  int64_t max_queued_tokens = 0;
  int64_t max_queued_requests = 0;
  // Most bytes of text over all inputs of one Embed call, stream message or
  // Tokenize call.
  int64_t max_text_bytes_per_call = 0;
  // Most spans in one input.
  int64_t max_spans_per_input = 0;
};

// A token with a fixed role.
struct SpecialToken {
  // "cls", "sep", "pad", "unk", "mask", "bos" or "eos".
  std::string role;
  // The token as the vocabulary spells it ("[CLS]").
  std::string token;
  uint32_t id = 0;
};

// The tokenizer that turns a model's text inputs into token ids.
struct TokenizerInfo {
  // "wordpiece" or "sentencepiece"; empty when the model has no tokenizer
  // (it then accepts token ids only).
  std::string kind;
  // The file it was loaded from, relative to the model's folder
  // ("tokenizer.json", "vocab.txt", "spiece.model", ...).
  std::string file;
  // Tokens the tokenizer adds around every text, in order.
  std::vector<SpecialToken> special_tokens;
};

// The attention of a model's encoder layers.
struct AttentionConfig {
  // Kernel name, as in AttendRequest::kernel.
  std::string kernel;
  // m; 0 for kernels without a projection.
  int64_t num_random_features = 0;
  // φ's width.
  int64_t num_features = 0;
  RandomFeatures random_features = RandomFeatures::kOrthogonal;
  RowNorm row_norm = RowNorm::kChi;
  uint64_t projection_seed = 0;
  bool causal = false;
};

// A model's architecture: what a client needs to frame inputs and read
// outputs. Special token ids are -1 when the vocabulary has none.
struct ModelConfig {
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  AttentionConfig attention;
  // What Pooling::kModelDefault and Normalization::kModelDefault mean for
  // this model (never kModelDefault themselves when the server sets them).
  Pooling default_pooling = Pooling::kModelDefault;
  Normalization default_normalization = Normalization::kModelDefault;
  bool has_attention_pooler = false;
  int64_t pad_token_id = -1;
  int64_t unk_token_id = -1;
  int64_t cls_token_id = -1;
  int64_t sep_token_id = -1;
  int64_t mask_token_id = -1;
  // The model's config.json as the server parsed it, every field included.
  std::string config_json;
  // Its tokenizer; kind is empty when it has none.
  TokenizerInfo tokenizer;
};

// One loaded model.
struct ModelInfo {
  // Name, as requests give it.
  std::string name;
  // Free-form version; may be empty.
  std::string version;
  // Whether requests that name no model get this one.
  bool is_default = false;
  ModelConfig config;
  ModelLimits limits;
  // Devices it runs on ("cpu", "cuda:0", ...).
  std::vector<std::string> devices;
  // The dtype its encoder computes in ("float32", "bfloat16", "float16").
  std::string dtype;
};

// The answer to ListModels.
struct ModelList {
  // Every loaded model, sorted by name.
  std::vector<ModelInfo> models;
  // Name of the default model; empty when there is none.
  std::string default_model;
};

}  // namespace favor

#endif  // FAVOR_CLIENT_INCLUDE_FAVOR_MODEL_INFO_H_
