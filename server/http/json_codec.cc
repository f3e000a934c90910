#include "server/http/json_codec.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/stubs/common.h"
#include "google/protobuf/util/json_util.h"
#include "server/common/json_parse.h"

namespace favor::http {

absl::Status CheckUtf8(absl::string_view text, absl::string_view what) {
  // The test protobuf applies to a proto3 string when it parses one.
  if (google::protobuf::internal::IsStructurallyValidUTF8(
          text.data(), static_cast<int>(text.size()))) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(what, " is not valid UTF-8 (JSON must be)"));
}

std::string CoerceToUtf8(absl::string_view text) {
  std::string buffer(text.size(), '\0');
  const char* coerced =
      google::protobuf::internal::UTF8CoerceToStructurallyValid(
          google::protobuf::StringPiece(text.data(), text.size()),
          buffer.data(), '?');
  return std::string(coerced, text.size());
}

absl::Status CheckRequestBody(absl::string_view json) {
  absl::Status utf8 = CheckUtf8(json, "the request body");
  if (!utf8.ok()) return utf8;
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, '"' included
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        return absl::InvalidArgumentError(
            absl::StrCat("the request body nests arrays and objects more "
                         "than ",
                         kMaxJsonDepth, " deep (at byte ", i, ")"));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return absl::OkStatus();
}

absl::Status ParseJson(absl::string_view json,
                       google::protobuf::Message* message) {
  absl::Status body = CheckRequestBody(json);
  if (!body.ok()) return body;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), message,
      options);
  if (status.ok()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "the request body is not a valid ", message->GetDescriptor()->name(),
      ": ", std::string(status.message())));
}

std::string PrintJson(const google::protobuf::Message& message,
                      bool with_defaults) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = with_defaults;
  std::string json;
  // Fails for a string that is not UTF-8 (callers coerce what a client
  // sent: CoerceToUtf8) or a broken Any (ours have none).
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

}  // namespace favor::http
