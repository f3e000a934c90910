#include "server/http/openai_embeddings.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/http/api_errors.h"
#include "server/http/json_codec.h"
#include "server/http/openai.pb.h"

namespace favor::http {
namespace {

using google::protobuf::ListValue;
using google::protobuf::Value;

absl::Status InputError(absl::string_view message) {
  return WithParam(absl::InvalidArgumentError(message), "input");
}

absl::Status AddText(const Value& value, v1::EmbedRequest* request) {
  if (value.kind_case() != Value::kStringValue) {
    return InputError("input: an array of strings holds only strings");
  }
  if (value.string_value().empty()) {
    return InputError("input: a string must not be empty");
  }
  request->add_inputs()->set_text(value.string_value());
  return absl::OkStatus();
}

absl::Status AddTokenIds(const ListValue& ids, v1::EmbedRequest* request) {
  if (ids.values().empty()) {
    return InputError("input: an array of token ids must not be empty");
  }
  v1::EmbedInput* input = request->add_inputs();
  for (const Value& id : ids.values()) {
    const double number = id.number_value();
    if (id.kind_case() != Value::kNumberValue || number < 0 ||
        number > std::numeric_limits<uint32_t>::max() ||
        std::floor(number) != number) {
      return InputError(
          "input: token ids are integers in [0, 4294967295], and an array "
          "of them holds nothing else");
    }
    input->add_token_ids(static_cast<uint32_t>(number));
  }
  return absl::OkStatus();
}

// An array: of strings, of token ids, or of arrays of token ids, as its
// first element says.
absl::Status AddArray(const ListValue& array, v1::EmbedRequest* request) {
  if (array.values().empty()) return InputError("input must not be empty");
  switch (array.values(0).kind_case()) {
    case Value::kStringValue:
      for (const Value& text : array.values()) {
        RETURN_IF_ERROR(AddText(text, request));
      }
      return absl::OkStatus();
    case Value::kNumberValue:
      return AddTokenIds(array, request);
    case Value::kListValue:
      for (const Value& ids : array.values()) {
        if (ids.kind_case() != Value::kListValue) {
          return InputError("input: an array of arrays holds only arrays");
        }
        RETURN_IF_ERROR(AddTokenIds(ids.list_value(), request));
      }
      return absl::OkStatus();
    default:
      return InputError(
          "input: an array holds strings, token ids or arrays of token ids");
  }
}

absl::Status AddInputs(const Value& input, v1::EmbedRequest* request) {
  switch (input.kind_case()) {
    case Value::kStringValue:
      return AddText(input, request);
    case Value::kListValue:
      return AddArray(input.list_value(), request);
    default:
      return InputError(
          "input is required: a string, an array of strings, an array of "
          "token ids or an array of arrays of token ids");
  }
}

// The little-endian bytes of `values` as float32, in base64.
std::string Base64Floats(const google::protobuf::RepeatedField<float>& values) {
  std::string bytes(values.size() * sizeof(float), '\0');
  for (int i = 0; i < values.size(); ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &values[i], sizeof(bits));
    for (int b = 0; b < 4; ++b) {
      bytes[static_cast<size_t>(i) * 4 + b] =
          static_cast<char>(bits >> (8 * b));
    }
  }
  return absl::Base64Escape(bytes);
}

absl::Status TypesError(std::string message) {
  return WithParam(absl::InvalidArgumentError(message), "embedding_types");
}

// Cohere's names, in EmbedRequest.embedding_types; a repeated type is the
// service's to refuse.
absl::Status AddEmbeddingTypes(
    const google::protobuf::RepeatedPtrField<std::string>& names,
    v1::EmbedRequest* request) {
  for (const std::string& name : names) {
    v1::EmbeddingType type = v1::EMBEDDING_TYPE_UNSPECIFIED;
    if (name == "float") type = v1::EMBEDDING_TYPE_FLOAT;
    if (name == "int8") type = v1::EMBEDDING_TYPE_INT8;
    if (name == "uint8") type = v1::EMBEDDING_TYPE_UINT8;
    if (name == "binary") type = v1::EMBEDDING_TYPE_BINARY;
    if (name == "ubinary") type = v1::EMBEDDING_TYPE_UBINARY;
    if (type == v1::EMBEDDING_TYPE_UNSPECIFIED) {
      return TypesError(absl::StrCat(
          "embedding_types: '", CoerceToUtf8(name.substr(0, 64)),
          "' is not one of float, int8, uint8, binary, ubinary"));
    }
    for (int known : request->embedding_types()) {
      if (known == type) {
        return TypesError(
            absl::StrCat("embedding_types lists '", name, "' twice"));
      }
    }
    request->add_embedding_types(type);
  }
  return absl::OkStatus();
}

// TEI's truncate and truncation_direction as EmbedRequest.truncation.
absl::Status SetTruncation(const openai::EmbeddingsRequest& parsed,
                           v1::EmbedRequest* request) {
  const std::string& direction = parsed.truncation_direction();
  const bool left = direction == "left" || direction == "Left";
  if (!direction.empty() && !left && direction != "right" &&
      direction != "Right") {
    return WithParam(
        absl::InvalidArgumentError(absl::StrCat(
            "truncation_direction is 'right' or 'left', not '",
            CoerceToUtf8(direction.substr(0, 64)), "'")),
        "truncation_direction");
  }
  request->set_truncation(!parsed.truncate() ? v1::TRUNCATION_NONE
                          : left             ? v1::TRUNCATION_LEFT
                                             : v1::TRUNCATION_RIGHT);
  return absl::OkStatus();
}

// Late chunking: the texts parsed into `request`'s inputs become one text
// input, joined by single spaces, with one span (byte range) per text.
absl::Status JoinChunks(bool truncate, v1::EmbedRequest* request) {
  const auto error = [](absl::string_view message) {
    return WithParam(absl::InvalidArgumentError(message), "late_chunking");
  };
  if (request->inputs_size() < 2) {
    return error(
        "late_chunking needs input to be an array of two or more strings, "
        "the consecutive chunks of one document");
  }
  if (request->inputs(0).token_ids_size() > 0) {
    return error(
        "late_chunking takes strings, not token ids: each token id array "
        "is framed as a whole sequence of its own");
  }
  if (truncate) {
    return error(
        "late_chunking embeds the whole document, so it cannot be "
        "truncated: drop truncate, or split the document");
  }
  v1::EmbedInput document;
  std::string* text = document.mutable_text();
  for (v1::EmbedInput& chunk : *request->mutable_inputs()) {
    if (!text->empty()) text->push_back(' ');
    v1::Span* span = document.add_spans();
    span->set_begin(static_cast<int64_t>(text->size()));
    text->append(chunk.text());
    span->set_end(static_cast<int64_t>(text->size()));
  }
  request->clear_inputs();
  *request->add_inputs() = std::move(document);
  return absl::OkStatus();
}

int32_t Clamped(int64_t count) {
  return static_cast<int32_t>(
      std::min<int64_t>(count, std::numeric_limits<int32_t>::max()));
}

// What one answered vector (an input's or, with late chunking, a chunk's)
// is made of.
struct Vector {
  const google::protobuf::RepeatedField<float>* values;
  const v1::QuantizedEmbedding* quantized;
  int64_t tokens;
  int64_t truncated_tokens;
};

std::vector<Vector> VectorsOf(const v1::EmbedResponse& response,
                              bool late_chunking) {
  std::vector<Vector> vectors;
  if (late_chunking && response.embeddings_size() == 1) {
    for (const v1::SpanEmbedding& span : response.embeddings(0).spans()) {
      vectors.push_back({&span.values(), &span.quantized(), span.num_tokens(),
                         0});
    }
    return vectors;
  }
  for (const v1::Embedding& embedding : response.embeddings()) {
    vectors.push_back({&embedding.values(), &embedding.quantized(),
                       embedding.num_tokens(),
                       embedding.num_truncated_tokens()});
  }
  return vectors;
}

// Bytes as JSON integers, signed (int8, binary) or not.
void AddBytes(const std::string& bytes, bool is_signed,
              google::protobuf::RepeatedField<int32_t>* out) {
  for (const char byte : bytes) {
    out->Add(is_signed ? static_cast<int32_t>(static_cast<int8_t>(byte))
                       : static_cast<int32_t>(static_cast<uint8_t>(byte)));
  }
}

// The fields that float and base64 responses share; `typed`: the request
// listed embedding_types.
template <typename Embeddings>
void FillList(const v1::EmbedResponse& response,
              const std::vector<Vector>& vectors, Embeddings* out) {
  out->set_object("list");
  out->set_model(response.model());
  const int32_t tokens = Clamped(response.num_tokens());
  out->mutable_usage()->set_prompt_tokens(tokens);
  out->mutable_usage()->set_total_tokens(tokens);
  for (size_t i = 0; i < vectors.size(); ++i) {
    auto* item = out->add_data();
    item->set_object("embedding");
    item->set_index(static_cast<int32_t>(i));
    openai::InputTokens* input = out->add_inputs();
    input->set_index(static_cast<int32_t>(i));
    input->set_tokens(Clamped(vectors[i].tokens));
    input->set_truncated_tokens(Clamped(vectors[i].truncated_tokens));
  }
}

void FillFloat(const Vector& vector, bool typed, openai::FloatEmbedding* out) {
  *out->mutable_embedding() = *vector.values;
  if (!typed) return;
  openai::EmbeddingsByType* types = out->mutable_embeddings();
  *types->mutable_float_() = *vector.values;
  const v1::QuantizedEmbedding& q = *vector.quantized;
  AddBytes(q.int8(), /*is_signed=*/true, types->mutable_int8());
  AddBytes(q.uint8(), /*is_signed=*/false, types->mutable_uint8());
  AddBytes(q.binary(), /*is_signed=*/true, types->mutable_binary());
  AddBytes(q.ubinary(), /*is_signed=*/false, types->mutable_ubinary());
}

void FillBase64(const Vector& vector, bool typed,
                openai::Base64Embedding* out) {
  // With embedding_types, the float values are there only when listed.
  if (!typed || !vector.values->empty()) {
    out->set_embedding(Base64Floats(*vector.values));
  }
  if (!typed) return;
  openai::Base64EmbeddingsByType* types = out->mutable_embeddings();
  if (!vector.values->empty()) types->set_float_(out->embedding());
  const v1::QuantizedEmbedding& q = *vector.quantized;
  if (!q.int8().empty()) types->set_int8(absl::Base64Escape(q.int8()));
  if (!q.uint8().empty()) types->set_uint8(absl::Base64Escape(q.uint8()));
  if (!q.binary().empty()) types->set_binary(absl::Base64Escape(q.binary()));
  if (!q.ubinary().empty()) {
    types->set_ubinary(absl::Base64Escape(q.ubinary()));
  }
}

}  // namespace

absl::StatusOr<EmbeddingsCall> ParseEmbeddingsRequest(
    absl::string_view json, const CallLimits& limits) {
  openai::EmbeddingsRequest parsed;
  RETURN_IF_ERROR(ParseJson(json, EmbeddingsBodyLimits(limits), &parsed));
  EmbeddingsCall call;
  RETURN_IF_ERROR(AddInputs(parsed.input(), &call.request));
  call.request.set_model(parsed.model());
  call.request.set_dimensions(parsed.dimensions());
  call.request.set_prompt_name(parsed.prompt_name());
  if (parsed.encoding_format() == "base64") {
    call.base64 = true;
  } else if (!parsed.encoding_format().empty() &&
             parsed.encoding_format() != "float") {
    return WithParam(absl::InvalidArgumentError(absl::StrCat(
                         "encoding_format is 'float' or 'base64', not '",
                         parsed.encoding_format(), "'")),
                     "encoding_format");
  }
  RETURN_IF_ERROR(
      AddEmbeddingTypes(parsed.embedding_types(), &call.request));
  RETURN_IF_ERROR(SetTruncation(parsed, &call.request));
  call.late_chunking = parsed.late_chunking();
  if (call.late_chunking) {
    RETURN_IF_ERROR(JoinChunks(parsed.truncate(), &call.request));
  }
  return call;
}

std::string EmbeddingsResponseJson(const v1::EmbedResponse& response,
                                   const EmbeddingsCall& call) {
  const std::vector<Vector> vectors = VectorsOf(response, call.late_chunking);
  const bool typed = !call.request.embedding_types().empty();
  if (call.base64) {
    openai::Base64Embeddings out;
    FillList(response, vectors, &out);
    for (size_t i = 0; i < vectors.size(); ++i) {
      FillBase64(vectors[i], typed, out.mutable_data(static_cast<int>(i)));
    }
    return PrintJson(out, /*with_defaults=*/false);
  }
  openai::FloatEmbeddings out;
  FillList(response, vectors, &out);
  for (size_t i = 0; i < vectors.size(); ++i) {
    FillFloat(vectors[i], typed, out.mutable_data(static_cast<int>(i)));
  }
  return PrintJson(out, /*with_defaults=*/false);
}

namespace {

void FillModel(const v1::ModelInfo& model, openai::Model* out) {
  out->set_id(model.name());
  out->set_object("model");
  out->set_owned_by("favor");
}

}  // namespace

std::string ModelListJson(const v1::ListModelsResponse& response) {
  openai::ModelList out;
  out.set_object("list");
  for (const v1::ModelInfo& model : response.models()) {
    FillModel(model, out.add_data());
  }
  return PrintJson(out, /*with_defaults=*/true);
}

std::string ModelJson(const v1::ModelInfo& model) {
  openai::Model out;
  FillModel(model, &out);
  return PrintJson(out, /*with_defaults=*/true);
}

}  // namespace favor::http
