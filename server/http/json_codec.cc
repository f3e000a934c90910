#include "server/http/json_codec.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/stubs/common.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"
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

namespace {

// nlohmann's SAX parser (strict RFC 8259) with a handler that counts and
// builds nothing.
class BodyChecker {
 public:
  explicit BodyChecker(const JsonBodyLimits& limits) : limits_(limits) {}

  bool null() { return Value(); }
  bool boolean(bool) { return Value(); }
  bool number_integer(nlohmann::json::number_integer_t) { return Value(); }
  bool number_unsigned(nlohmann::json::number_unsigned_t) { return Value(); }
  bool number_float(nlohmann::json::number_float_t, const std::string&) {
    return Value();
  }
  bool string(std::string&) {
    return Count(++strings_, limits_.max_strings, "strings") && Value();
  }
  bool binary(nlohmann::json::binary_t&) { return Value(); }
  bool start_object(std::size_t) { return Open(/*array=*/false); }
  bool key(std::string& key) {
    Level& level = open_.back();
    if (static_cast<int64_t>(level.keys.size()) >= limits_.max_object_members) {
      return Fail(absl::StrCat("has an object of more than ",
                               limits_.max_object_members, " members"));
    }
    if (std::find(level.keys.begin(), level.keys.end(), key) !=
        level.keys.end()) {
      return Fail(
          absl::StrCat("has the key \"", CoerceToUtf8(key), "\" twice"));
    }
    level.keys.push_back(key);
    return true;
  }
  bool end_object() {
    open_.pop_back();
    return true;
  }
  bool start_array(std::size_t) { return Open(/*array=*/true); }
  bool end_array() {
    open_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& error) {
    // "[json.exception.parse_error.101] parse error at line 1, column 9:
    // syntax error while parsing value - ...": the part after the tag.
    absl::string_view what = error.what();
    const size_t tag = what.find("] ");
    if (tag != absl::string_view::npos) what.remove_prefix(tag + 2);
    return Fail(absl::StrCat("is not valid JSON: ", CoerceToUtf8(what)));
  }

  const absl::Status& status() const { return status_; }

 private:
  struct Level {
    bool array = false;
    int64_t nested = 0;             // an array's objects and arrays
    std::vector<std::string> keys;  // an object's keys so far
  };

  bool Value() { return Count(++values_, limits_.max_values, "values"); }

  bool Open(bool array) {
    if (!Value() ||
        !Count(++containers_, limits_.max_containers, "objects and arrays")) {
      return false;
    }
    if (!open_.empty() && open_.back().array &&
        ++open_.back().nested > limits_.max_nested_in_array) {
      return Fail(absl::StrCat("has an array of more than ",
                               limits_.max_nested_in_array,
                               " objects or arrays", limits_.why));
    }
    if (open_.size() >= static_cast<size_t>(kMaxJsonDepth)) {
      return Fail(absl::StrCat("nests arrays and objects more than ",
                               kMaxJsonDepth, " deep"));
    }
    open_.push_back(Level{array, 0, {}});
    return true;
  }

  bool Count(int64_t count, int64_t limit, absl::string_view what) {
    if (count <= limit) return true;
    return Fail(absl::StrCat("has more than ", limit, " ", what, limits_.why));
  }

  bool Fail(std::string message) {
    status_ = absl::InvalidArgumentError(
        absl::StrCat("the request body ", std::move(message)));
    return false;
  }

  const JsonBodyLimits& limits_;
  int64_t values_ = 0;
  int64_t strings_ = 0;
  int64_t containers_ = 0;
  std::vector<Level> open_;
  absl::Status status_;
};

// The flags have no upper bounds: counts are summed in double and capped.
int64_t Capped(double count) {
  return count >= static_cast<double>(INT64_MAX) ? INT64_MAX
                                                 : static_cast<int64_t>(count);
}

std::string Why(const CallLimits& limits) {
  return absl::StrCat(", more than a call of at most ",
                      limits.max_inputs_per_call, " inputs and ",
                      limits.max_tokens_per_call,
                      " tokens (the server's limits) needs");
}

}  // namespace

JsonBodyLimits EmbeddingsBodyLimits(const CallLimits& limits) {
  JsonBodyLimits body;
  body.why = Why(limits);
  // {"input": [[ids], ...], "model": "...", ...}
  const double inputs = static_cast<double>(limits.max_inputs_per_call);
  body.max_nested_in_array = limits.max_inputs_per_call;
  body.max_containers = Capped(inputs + 3);  // and embedding_types
  // model, encoding_format, user, prompt_name, truncation_direction and
  // the five embedding_types
  body.max_strings = Capped(inputs + 10);
  body.max_values =
      Capped(static_cast<double>(limits.max_tokens_per_call) + 2 * inputs + 32);
  return body;
}

JsonBodyLimits FavorBodyLimits(const CallLimits& limits) {
  JsonBodyLimits body;
  body.why = Why(limits);
  // {"inputs": [{"token_ids": [...], "text": "...", "spans": [{...}, ...],
  // ...}, ...], ...}: an input is an object with two arrays, a span an
  // object of a few numbers.
  const double inputs = static_cast<double>(limits.max_inputs_per_call);
  const double containers =
      3 * inputs + inputs * static_cast<double>(limits.max_spans_per_input) +
      64;
  const double strings = 8 * inputs + 64;
  body.max_nested_in_array =
      std::max(limits.max_inputs_per_call, limits.max_spans_per_input);
  body.max_containers = Capped(containers);
  body.max_strings = Capped(strings);
  body.max_values = Capped(static_cast<double>(limits.max_tokens_per_call) +
                           4 * containers + strings + 16 * inputs);
  return body;
}

absl::Status CheckRequestBody(absl::string_view json,
                              const JsonBodyLimits& limits) {
  absl::Status utf8 = CheckUtf8(json, "the request body");
  if (!utf8.ok()) return utf8;
  BodyChecker checker(limits);
  if (nlohmann::json::sax_parse(json.begin(), json.end(), &checker)) {
    return absl::OkStatus();
  }
  return checker.status();
}

absl::Status ParseJson(absl::string_view json, const JsonBodyLimits& limits,
                       google::protobuf::Message* message) {
  absl::Status body = CheckRequestBody(json, limits);
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
