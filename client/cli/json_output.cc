#include "client/cli/json_output.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace favor::cli {
namespace {

const char* PoolingName(Pooling pooling) {
  switch (pooling) {
    case Pooling::kModelDefault:
      return "unspecified";
    case Pooling::kMean:
      return "mean";
    case Pooling::kCls:
      return "cls";
    case Pooling::kAttention:
      return "attention";
    case Pooling::kNone:
      return "none";
    case Pooling::kMax:
      return "max";
    case Pooling::kLastToken:
      return "last_token";
  }
  return "unknown";
}

const char* NormalizationName(Normalization normalization) {
  switch (normalization) {
    case Normalization::kModelDefault:
      return "unspecified";
    case Normalization::kNone:
      return "none";
    case Normalization::kL2:
      return "l2";
  }
  return "unknown";
}

const char* RandomFeaturesName(RandomFeatures features) {
  switch (features) {
    case RandomFeatures::kIid:
      return "iid";
    case RandomFeatures::kSimplex:
      return "simplex";
    case RandomFeatures::kOrthogonal:
      break;
  }
  return "orthogonal";
}

const char* RowNormName(RowNorm norm) {
  return norm == RowNorm::kSqrtDim ? "sqrt_dim" : "chi";
}

absl::StatusOr<nlohmann::json> TensorToJson(const Tensor& tensor) {
  absl::StatusOr<std::vector<float>> values = tensor.ToFloats();
  if (!values.ok()) return values.status();
  return nlohmann::json{{"shape", tensor.shape},
                        {"dtype", DtypeName(tensor.dtype)},
                        {"values", *values}};
}

nlohmann::json TokenizerToJson(const TokenizerInfo& tokenizer) {
  nlohmann::json special_tokens = nlohmann::json::array();
  for (const SpecialToken& token : tokenizer.special_tokens) {
    special_tokens.push_back(
        {{"role", token.role}, {"token", token.token}, {"id", token.id}});
  }
  return {{"kind", tokenizer.kind},
          {"file", tokenizer.file},
          {"special_tokens", std::move(special_tokens)}};
}

// The quantised forms that were asked for, as integers, into `json`.
void AddQuantized(const QuantizedEmbedding& quantized, nlohmann::json* json) {
  if (!quantized.int8.empty()) (*json)["int8"] = quantized.int8;
  if (!quantized.uint8.empty()) (*json)["uint8"] = quantized.uint8;
  if (!quantized.binary.empty()) (*json)["binary"] = quantized.binary;
  if (!quantized.ubinary.empty()) (*json)["ubinary"] = quantized.ubinary;
}

// An Embedding's spans and chunk count, when it has them.
void AddSpansAndChunks(const Embedding& embedding, nlohmann::json* json) {
  if (!embedding.spans.empty()) {
    nlohmann::json spans = nlohmann::json::array();
    for (const SpanEmbedding& span : embedding.spans) {
      nlohmann::json one = {{"num_tokens", span.num_tokens},
                            {"values", span.values}};
      AddQuantized(span.quantized, &one);
      spans.push_back(std::move(one));
    }
    (*json)["spans"] = std::move(spans);
  }
  if (embedding.num_chunks > 0) (*json)["num_chunks"] = embedding.num_chunks;
}

nlohmann::json ConfigToJson(const ModelConfig& config) {
  const AttentionConfig& attention = config.attention;
  nlohmann::json json = {
      {"vocab_size", config.vocab_size},
      {"hidden_size", config.hidden_size},
      {"num_hidden_layers", config.num_hidden_layers},
      {"num_attention_heads", config.num_attention_heads},
      {"attention",
       {{"kernel", attention.kernel},
        {"num_random_features", attention.num_random_features},
        {"num_features", attention.num_features},
        {"random_features", RandomFeaturesName(attention.random_features)},
        {"row_norm", RowNormName(attention.row_norm)},
        {"projection_seed", attention.projection_seed},
        {"causal", attention.causal}}},
      {"default_pooling", PoolingName(config.default_pooling)},
      {"default_normalization",
       NormalizationName(config.default_normalization)},
      {"has_attention_pooler", config.has_attention_pooler},
      {"pad_token_id", config.pad_token_id},
      {"unk_token_id", config.unk_token_id},
      {"cls_token_id", config.cls_token_id},
      {"sep_token_id", config.sep_token_id},
      {"mask_token_id", config.mask_token_id}};
  json["tokenizer"] = TokenizerToJson(config.tokenizer);
  // The server's config.json, parsed so that it nests; kept as a string if
  // it is not JSON (it always is from favor-server).
  nlohmann::json parsed = nlohmann::json::parse(config.config_json, nullptr,
                                                /*allow_exceptions=*/false);
  json["config_json"] =
      parsed.is_discarded() ? nlohmann::json(config.config_json) : parsed;
  return json;
}

nlohmann::json LimitsToJson(const ModelLimits& limits) {
  return {{"max_tokens_per_input", limits.max_tokens_per_input},
          {"max_tokens_per_call", limits.max_tokens_per_call},
          {"max_inputs_per_call", limits.max_inputs_per_call},
          {"max_tokens_per_batch", limits.max_tokens_per_batch},
          {"max_requests_per_batch", limits.max_requests_per_batch},
          {"max_queued_tokens", limits.max_queued_tokens},
          {"max_queued_requests", limits.max_queued_requests},
          {"max_text_bytes_per_call", limits.max_text_bytes_per_call},
          {"max_spans_per_input", limits.max_spans_per_input}};
}

}  // namespace

nlohmann::json ServerTimingToJson(const ServerTiming& timing) {
  return {
      {"queue_time_micros", absl::ToInt64Microseconds(timing.queue_time)},
      {"compute_time_micros", absl::ToInt64Microseconds(timing.compute_time)}};
}

absl::StatusOr<nlohmann::json> EmbedResultToJson(const EmbedResult& result) {
  nlohmann::json embeddings = nlohmann::json::array();
  for (const Embedding& embedding : result.embeddings) {
    nlohmann::json json = {
        {"num_tokens", embedding.num_tokens},
        {"num_truncated_tokens", embedding.num_truncated_tokens},
        {"values", embedding.values}};
    if (embedding.token_embeddings.has_value()) {
      absl::StatusOr<nlohmann::json> tokens =
          TensorToJson(*embedding.token_embeddings);
      if (!tokens.ok()) return tokens.status();
      json["token_embeddings"] = *std::move(tokens);
    }
    AddQuantized(embedding.quantized, &json);
    AddSpansAndChunks(embedding, &json);
    embeddings.push_back(std::move(json));
  }
  return nlohmann::json{{"model", result.model},
                        {"model_version", result.model_version},
                        {"num_tokens", result.num_tokens},
                        {"timing", ServerTimingToJson(result.timing)},
                        {"embeddings", std::move(embeddings)}};
}

nlohmann::json TokenizeResultToJson(const TokenizeResult& result) {
  nlohmann::json texts = nlohmann::json::array();
  for (const TokenizedText& text : result.texts) {
    texts.push_back({{"ids", text.ids},
                     {"tokens", text.tokens},
                     {"begin_offsets", text.begin_offsets},
                     {"end_offsets", text.end_offsets},
                     {"special", text.special}});
  }
  return {{"model", result.model}, {"texts", std::move(texts)}};
}

nlohmann::json ModelInfoToJson(const ModelInfo& model) {
  return {{"name", model.name},
          {"version", model.version},
          {"is_default", model.is_default},
          {"devices", model.devices},
          {"dtype", model.dtype},
          {"config", ConfigToJson(model.config)},
          {"limits", LimitsToJson(model.limits)}};
}

nlohmann::json ModelListToJson(const ModelList& list) {
  nlohmann::json models = nlohmann::json::array();
  for (const ModelInfo& model : list.models) {
    models.push_back(ModelInfoToJson(model));
  }
  return {{"default_model", list.default_model}, {"models", std::move(models)}};
}

absl::StatusOr<nlohmann::json> AttendSummaryToJson(const AttendResult& result) {
  absl::StatusOr<std::vector<float>> values = result.output.ToFloats();
  if (!values.ok()) return values.status();
  double sum = 0;
  double sum_of_squares = 0;
  float min = values->empty() ? 0.0f : values->front();
  float max = min;
  for (float value : *values) {
    sum += value;
    sum_of_squares += static_cast<double>(value) * value;
    min = std::min(min, value);
    max = std::max(max, value);
  }
  const double count = static_cast<double>(values->size());
  nlohmann::json output = {{"shape", result.output.shape},
                           {"dtype", DtypeName(result.output.dtype)},
                           {"elements", values->size()},
                           {"min", min},
                           {"max", max},
                           {"mean", count > 0 ? sum / count : 0.0},
                           {"l2_norm", std::sqrt(sum_of_squares)}};
  return nlohmann::json{{"kernel", result.kernel},
                        {"num_features", result.num_features},
                        {"timing", ServerTimingToJson(result.timing)},
                        {"output", std::move(output)}};
}

}  // namespace favor::cli
