#include "server/http/openai_embeddings.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

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

// Fills the fields that float and base64 responses share.
template <typename Embeddings>
void FillList(const v1::EmbedResponse& response, Embeddings* out) {
  out->set_object("list");
  out->set_model(response.model());
  const auto tokens = static_cast<int32_t>(response.num_tokens());
  out->mutable_usage()->set_prompt_tokens(tokens);
  out->mutable_usage()->set_total_tokens(tokens);
  for (int i = 0; i < response.embeddings_size(); ++i) {
    auto* item = out->add_data();
    item->set_object("embedding");
    item->set_index(i);
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
  return call;
}

std::string EmbeddingsResponseJson(const v1::EmbedResponse& response,
                                   bool base64) {
  if (base64) {
    openai::Base64Embeddings out;
    FillList(response, &out);
    for (int i = 0; i < response.embeddings_size(); ++i) {
      out.mutable_data(i)->set_embedding(
          Base64Floats(response.embeddings(i).values()));
    }
    return PrintJson(out, /*with_defaults=*/true);
  }
  openai::FloatEmbeddings out;
  FillList(response, &out);
  for (int i = 0; i < response.embeddings_size(); ++i) {
    *out.mutable_data(i)->mutable_embedding() = response.embeddings(i).values();
  }
  return PrintJson(out, /*with_defaults=*/true);
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
