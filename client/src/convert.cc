#include "convert.h"

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace favor::client_internal {
namespace {

ServerTiming FromProto(const v1::ServerTiming& proto) {
  ServerTiming timing;
  timing.queue_time = absl::Microseconds(proto.queue_time_micros());
  timing.compute_time = absl::Microseconds(proto.compute_time_micros());
  return timing;
}

// The enums share their numbers with favor.v1 (zero is "unspecified").
template <typename Proto, typename Plain>
Proto ToProtoEnum(Plain value) {
  return static_cast<Proto>(static_cast<int>(value));
}

template <typename Plain, typename Proto>
Plain FromProtoEnum(Proto value, Plain if_unspecified) {
  return value == 0 ? if_unspecified
                    : static_cast<Plain>(static_cast<int>(value));
}

template <typename Byte>
std::vector<Byte> BytesOf(const std::string& bytes) {
  std::vector<Byte> out(bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    out[i] = static_cast<Byte>(bytes[i]);
  }
  return out;
}

QuantizedEmbedding FromProto(const v1::QuantizedEmbedding& proto) {
  return {BytesOf<int8_t>(proto.int8()), BytesOf<uint8_t>(proto.uint8()),
          BytesOf<int8_t>(proto.binary()), BytesOf<uint8_t>(proto.ubinary())};
}

Embedding FromProto(const v1::Embedding& proto) {
  Embedding embedding;
  embedding.values.assign(proto.values().begin(), proto.values().end());
  if (proto.has_token_embeddings()) {
    embedding.token_embeddings =
        client_internal::FromProto(proto.token_embeddings());
  }
  embedding.num_tokens = proto.num_tokens();
  embedding.num_truncated_tokens = proto.num_truncated_tokens();
  embedding.spans.reserve(static_cast<size_t>(proto.spans_size()));
  for (const v1::SpanEmbedding& span : proto.spans()) {
    embedding.spans.push_back(
        {std::vector<float>(span.values().begin(), span.values().end()),
         span.num_tokens(), FromProto(span.quantized())});
  }
  embedding.num_chunks = proto.num_chunks();
  embedding.quantized = FromProto(proto.quantized());
  return embedding;
}

TokenizerInfo FromProto(const v1::TokenizerInfo& proto) {
  TokenizerInfo info;
  info.kind = proto.kind();
  info.file = proto.file();
  info.special_tokens.reserve(static_cast<size_t>(proto.special_tokens_size()));
  for (const v1::SpecialToken& token : proto.special_tokens()) {
    info.special_tokens.push_back({token.role(), token.token(), token.id()});
  }
  return info;
}

TokenizedText FromProto(const v1::TokenizedText& proto) {
  TokenizedText text;
  text.ids.assign(proto.ids().begin(), proto.ids().end());
  text.tokens.assign(proto.tokens().begin(), proto.tokens().end());
  text.begin_offsets.assign(proto.begin_offsets().begin(),
                            proto.begin_offsets().end());
  text.end_offsets.assign(proto.end_offsets().begin(),
                          proto.end_offsets().end());
  text.special.assign(proto.special().begin(), proto.special().end());
  return text;
}

// The fields of EmbedOptions, the inputs aside.
void OptionsToProto(const EmbedOptions& options, v1::EmbedRequest* proto) {
  proto->set_model(options.model);
  proto->set_pooling(ToProtoEnum<v1::Pooling>(options.pooling));
  proto->set_normalization(
      ToProtoEnum<v1::Normalization>(options.normalization));
  proto->set_truncation(ToProtoEnum<v1::Truncation>(options.truncation));
  proto->set_include_token_embeddings(options.include_token_embeddings);
  proto->set_token_embeddings_dtype(
      ToProtoEnum<v1::Dtype>(options.token_embeddings_dtype));
  proto->set_priority(ToProtoEnum<v1::Priority>(options.priority));
  proto->set_dimensions(options.dimensions);
  proto->set_chunk_overlap_tokens(options.chunk_overlap_tokens);
  for (const EmbeddingType type : options.embedding_types) {
    proto->add_embedding_types(ToProtoEnum<v1::EmbeddingType>(type));
  }
}

AttentionConfig FromProto(const v1::AttentionConfig& proto) {
  AttentionConfig config;
  config.kernel = proto.kernel();
  config.num_random_features = proto.num_random_features();
  config.num_features = proto.num_features();
  config.random_features =
      FromProtoEnum(proto.random_features(), RandomFeatures::kOrthogonal);
  config.row_norm = FromProtoEnum(proto.row_norm(), RowNorm::kChi);
  config.projection_seed = proto.projection_seed();
  config.causal = proto.causal();
  return config;
}

ModelConfig FromProto(const v1::ModelConfig& proto) {
  ModelConfig config;
  config.vocab_size = proto.vocab_size();
  config.hidden_size = proto.hidden_size();
  config.num_hidden_layers = proto.num_hidden_layers();
  config.num_attention_heads = proto.num_attention_heads();
  config.attention = FromProto(proto.attention());
  config.default_pooling =
      FromProtoEnum(proto.default_pooling(), Pooling::kModelDefault);
  config.default_normalization = FromProtoEnum(proto.default_normalization(),
                                               Normalization::kModelDefault);
  config.has_attention_pooler = proto.has_attention_pooler();
  config.pad_token_id = proto.pad_token_id();
  config.unk_token_id = proto.unk_token_id();
  config.cls_token_id = proto.cls_token_id();
  config.sep_token_id = proto.sep_token_id();
  config.mask_token_id = proto.mask_token_id();
  config.config_json = proto.config_json();
  config.tokenizer = FromProto(proto.tokenizer());
  return config;
}

ModelLimits FromProto(const v1::ModelLimits& proto) {
  ModelLimits limits;
  limits.max_tokens_per_input = proto.max_tokens_per_input();
  limits.max_tokens_per_call = proto.max_tokens_per_call();
  limits.max_inputs_per_call = proto.max_inputs_per_call();
  limits.max_tokens_per_batch = proto.max_tokens_per_batch();
  limits.max_requests_per_batch = proto.max_requests_per_batch();
  limits.max_queued_tokens = proto.max_queued_tokens();
  limits.max_queued_requests = proto.max_queued_requests();
  limits.max_text_bytes_per_call = proto.max_text_bytes_per_call();
  limits.max_spans_per_input = proto.max_spans_per_input();
  return limits;
}

}  // namespace

// FromProto of every message of a repeated field, in order. Outside the
// unnamed namespace, whose FromProto overloads would otherwise hide those of
// convert.h.
template <typename Plain, typename Proto>
std::vector<Plain> FromProtoEach(
    const google::protobuf::RepeatedPtrField<Proto>& protos) {
  std::vector<Plain> plain;
  plain.reserve(protos.size());
  for (const Proto& proto : protos) plain.push_back(FromProto(proto));
  return plain;
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

absl::Status FromProtoStatus(const v1::Status& status) {
  if (status.code() == 0) {
    return absl::InternalError(
        "the server answered a stream message with an error status of code "
        "OK: " +
        status.message());
  }
  return absl::Status(static_cast<absl::StatusCode>(status.code()),
                      status.message());
}

void ToProto(const Tensor& tensor, v1::Tensor* proto) {
  proto->mutable_shape()->Assign(tensor.shape.begin(), tensor.shape.end());
  proto->set_dtype(ToProtoEnum<v1::Dtype>(tensor.dtype));
  proto->set_data(tensor.data);
}

Tensor FromProto(const v1::Tensor& proto) {
  Tensor tensor;
  tensor.shape.assign(proto.shape().begin(), proto.shape().end());
  tensor.dtype = FromProtoEnum(proto.dtype(), Dtype::kFloat32);
  tensor.data = proto.data();
  return tensor;
}

void ToProto(absl::Span<const EmbedInput> inputs, const EmbedOptions& options,
             v1::EmbedRequest* proto) {
  proto->mutable_inputs()->Reserve(static_cast<int>(inputs.size()));
  for (const EmbedInput& input : inputs) {
    v1::EmbedInput* added = proto->add_inputs();
    added->mutable_token_ids()->Assign(input.token_ids.begin(),
                                       input.token_ids.end());
    added->set_text(input.text);
    added->mutable_spans()->Reserve(static_cast<int>(input.spans.size()));
    for (const InputSpan& span : input.spans) {
      v1::Span* added_span = added->add_spans();
      added_span->set_begin(span.begin);
      added_span->set_end(span.end);
    }
  }
  OptionsToProto(options, proto);
}

std::vector<EmbedInput> ToEmbedInputs(absl::Span<const TokenIds> inputs) {
  std::vector<EmbedInput> converted;
  converted.reserve(inputs.size());
  for (const TokenIds& ids : inputs) converted.emplace_back(ids);
  return converted;
}

EmbedResult FromProto(const v1::EmbedResponse& proto) {
  EmbedResult result;
  result.embeddings = FromProtoEach<Embedding>(proto.embeddings());
  result.model = proto.model();
  result.model_version = proto.model_version();
  result.num_tokens = proto.num_tokens();
  result.timing = FromProto(proto.timing());
  return result;
}

void ToProto(absl::Span<const std::string> texts,
             const TokenizeOptions& options, v1::TokenizeRequest* proto) {
  proto->set_model(options.model);
  proto->mutable_texts()->Assign(texts.begin(), texts.end());
  proto->set_without_special_tokens(options.without_special_tokens);
}

TokenizeResult FromProto(const v1::TokenizeResponse& proto) {
  TokenizeResult result;
  result.texts = FromProtoEach<TokenizedText>(proto.texts());
  result.model = proto.model();
  return result;
}

void ToProto(const AttendRequest& request, v1::AttendRequest* proto) {
  ToProto(request.query, proto->mutable_query());
  ToProto(request.key, proto->mutable_key());
  ToProto(request.value, proto->mutable_value());
  proto->set_kernel(request.kernel);
  proto->set_num_random_features(request.num_random_features);
  proto->set_random_features(
      ToProtoEnum<v1::RandomFeatures>(request.random_features));
  proto->set_row_norm(ToProtoEnum<v1::RowNorm>(request.row_norm));
  if (request.projection_matrix.has_value()) {
    ToProto(*request.projection_matrix, proto->mutable_projection_matrix());
  } else {
    proto->set_projection_seed(request.projection_seed);
  }
  proto->set_causal(request.causal);
  proto->mutable_key_padding_mask()->Reserve(
      static_cast<int>(request.key_padding_mask.size()));
  for (bool padding : request.key_padding_mask) {
    proto->add_key_padding_mask(padding);
  }
  proto->set_priority(ToProtoEnum<v1::Priority>(request.priority));
}

AttendResult FromProto(const v1::AttendResponse& proto) {
  AttendResult result;
  result.output = FromProto(proto.output());
  result.kernel = proto.kernel();
  result.num_features = proto.num_features();
  result.timing = FromProto(proto.timing());
  return result;
}

ModelInfo FromProto(const v1::ModelInfo& proto) {
  ModelInfo info;
  info.name = proto.name();
  info.version = proto.version();
  info.is_default = proto.is_default();
  info.config = FromProto(proto.config());
  info.limits = FromProto(proto.limits());
  info.devices.assign(proto.devices().begin(), proto.devices().end());
  info.dtype = proto.dtype();
  return info;
}

ModelInfo FromProto(const v1::GetModelResponse& proto) {
  return FromProto(proto.model());
}

ModelList FromProto(const v1::ListModelsResponse& proto) {
  ModelList list;
  list.models = FromProtoEach<ModelInfo>(proto.models());
  list.default_model = proto.default_model();
  return list;
}

}  // namespace favor::client_internal
