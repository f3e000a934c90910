// Reading config.json: ParseModelConfig and LoadModelConfig. Which fields
// exist and how each is read follow from the schema (model_config_fields.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <set>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "server/common/json_parse.h"
#include "server/common/status_macros.h"
#include "server/model/model_config.h"
#include "server/model/model_config_fields.h"

namespace favor::model {
namespace {

using Json = nlohmann::json;
using Limits = ModelConfigLimits;
using internal::ConfigFields;
using internal::EnumNames;

// Hugging Face config fields that say nothing about inference; accepted and
// ignored so that a BERT config.json can be extended rather than rewritten.
const std::set<absl::string_view>& IgnoredFields() {
  static const auto* fields =
      new std::set<absl::string_view>{"architectures",
                                      "model_type",
                                      "transformers_version",
                                      "torch_dtype",
                                      "hidden_dropout_prob",
                                      "attention_probs_dropout_prob",
                                      "classifier_dropout",
                                      "initializer_range",
                                      "use_cache",
                                      "gradient_checkpointing"};
  return *fields;
}

bool IsCommentField(absl::string_view key) {
  return absl::StartsWith(key, "_");
}

bool IsIgnoredTopLevelField(absl::string_view key) {
  return IsCommentField(key) || IgnoredFields().count(key) > 0;
}

bool IsInt64(const Json& value) {
  return value.is_number_integer() &&
         (!value.is_number_unsigned() ||
          value.get<uint64_t>() <=
              uint64_t{std::numeric_limits<int64_t>::max()});
}
bool IsUInt64(const Json& value) { return value.is_number_unsigned(); }
bool IsNumber(const Json& value) { return value.is_number(); }
bool IsBool(const Json& value) { return value.is_boolean(); }
bool IsString(const Json& value) { return value.is_string(); }

// Reads typed fields of one JSON object and remembers which it read, so that
// the rest can be reported as unknown. Messages name the field with its
// prefix ("attention.kernel"). An absent field leaves `out` as it was: the
// default.
class FieldReader {
 public:
  FieldReader(const Json& object, std::string prefix)
      : object_(object), prefix_(std::move(prefix)) {}

  const std::string& prefix() const { return prefix_; }

  absl::Status Read(absl::string_view key, int64_t& out) {
    return Scalar(key, IsInt64, "a 64-bit integer", out);
  }
  absl::Status Read(absl::string_view key, uint64_t& out) {
    return Scalar(key, IsUInt64, "a non-negative 64-bit integer", out);
  }
  absl::Status Read(absl::string_view key, double& out) {
    return Scalar(key, IsNumber, "a number", out);
  }
  absl::Status Read(absl::string_view key, bool& out) {
    return Scalar(key, IsBool, "true or false", out);
  }
  absl::Status Read(absl::string_view key, std::string& out) {
    return Scalar(key, IsString, "a string", out);
  }
  absl::Status Read(absl::string_view key, attention::Kernel& out);
  // Enums with a name table (EnumNames).
  template <typename T, typename = std::enable_if_t<std::is_enum_v<T>>>
  absl::Status Read(absl::string_view key, T& out);
  // The object under `key`, or nullptr when absent.
  absl::StatusOr<const Json*> Object(absl::string_view key);
  // Fails on the first field not read, unless `ignore` accepts it.
  absl::Status RejectUnknown(bool (*ignore)(absl::string_view)) const;

 private:
  const Json* Find(absl::string_view key) {
    auto it = object_.find(key);
    if (it == object_.end()) return nullptr;
    read_.emplace(key);
    return &*it;
  }
  template <typename T>
  absl::Status Scalar(absl::string_view key, bool (*valid)(const Json&),
                      absl::string_view expected, T& out) {
    const Json* value = Find(key);
    if (value == nullptr) return absl::OkStatus();
    if (!valid(*value)) return Wrong(key, expected, *value);
    out = value->get<T>();
    return absl::OkStatus();
  }
  absl::Status Wrong(absl::string_view key, absl::string_view expected,
                     const Json& value) const {
    return absl::InvalidArgumentError(
        absl::StrCat("field '", prefix_, key, "' must be ", expected, ", got ",
                     DescribeJson(value)));
  }

  const Json& object_;
  std::string prefix_;
  std::set<std::string, std::less<>> read_;
};

template <typename T, typename>
absl::Status FieldReader::Read(absl::string_view key, T& out) {
  const Json* value = Find(key);
  if (value == nullptr) return absl::OkStatus();
  std::vector<std::string> names;
  for (const auto& entry : EnumNames(out)) {
    if (value->is_string() &&
        value->get_ref<const std::string&>() == entry.name) {
      out = entry.value;
      return absl::OkStatus();
    }
    names.push_back(absl::StrCat("\"", entry.name, "\""));
  }
  return Wrong(key, absl::StrCat("one of ", absl::StrJoin(names, ", ")),
               *value);
}

absl::Status FieldReader::Read(absl::string_view key, attention::Kernel& out) {
  const Json* value = Find(key);
  if (value == nullptr) return absl::OkStatus();
  if (!value->is_string()) return Wrong(key, "a kernel name", *value);
  absl::StatusOr<attention::Kernel> kernel =
      attention::ParseKernel(value->get_ref<const std::string&>());
  if (!kernel.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field '", prefix_, key, "': ", kernel.status().message()));
  }
  out = *kernel;
  return absl::OkStatus();
}

absl::StatusOr<const Json*> FieldReader::Object(absl::string_view key) {
  const Json* value = Find(key);
  if (value != nullptr && !value->is_object()) {
    return Wrong(key, "an object", *value);
  }
  return value;
}

absl::Status FieldReader::RejectUnknown(
    bool (*ignore)(absl::string_view)) const {
  for (const auto& [key, unused] : object_.items()) {
    if (read_.count(key) == 0 && !ignore(key)) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown field '", prefix_, key,
                       "' (see docs/models.md for the fields Favor reads)"));
    }
  }
  return absl::OkStatus();
}

template <typename Config>
absl::Status ReadFields(FieldReader& reader, Config& config);

// One field of the schema: a value, or a nested object of its own fields,
// in which only comments are ignored.
template <typename T>
absl::Status ReadField(FieldReader& reader, absl::string_view key, T& out) {
  if constexpr (internal::kIsNestedConfig<T>) {
    ASSIGN_OR_RETURN(const Json* object, reader.Object(key));
    if (object == nullptr) return absl::OkStatus();
    FieldReader nested(*object, absl::StrCat(reader.prefix(), key, "."));
    RETURN_IF_ERROR(ReadFields(nested, out));
    return nested.RejectUnknown(IsCommentField);
  } else {
    return reader.Read(key, out);
  }
}

// Every field of `Config`'s table, in order; stops at the first error.
template <typename Config>
absl::Status ReadFields(FieldReader& reader, Config& config) {
  absl::Status status;
  ConfigFields<Config>::ForEach([&](absl::string_view key, auto member) {
    if (status.ok()) status = ReadField(reader, key, config.*member);
  });
  return status;
}

}  // namespace

absl::StatusOr<ModelConfig> ParseModelConfig(absl::string_view json_text,
                                             absl::string_view source_name) {
  ASSIGN_OR_RETURN(Json json, ParseJsonObject(json_text, source_name));
  ModelConfig config;
  FieldReader reader(json, "");
  absl::Status status = ReadFields(reader, config);
  if (status.ok()) status = reader.RejectUnknown(IsIgnoredTopLevelField);
  if (status.ok()) status = ValidateModelConfig(config);
  if (!status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat(source_name, ": ", status.message()));
  }
  return config;
}

absl::StatusOr<std::string> ReadConfigText(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (a config.json
  // that is a named pipe would hang the server).
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat(path, ": cannot open"));
  }
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a regular file"));
  }
  std::string text;
  char buffer[65536];
  int error = 0;
  while (text.size() <= Limits::kMaxConfigFileBytes) {
    const ssize_t got = read(fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) error = errno;
    if (got <= 0) break;
    text.append(buffer, static_cast<size_t>(got));
  }
  close(fd);
  if (error != 0) {
    return absl::ErrnoToStatus(error, absl::StrCat(path, ": cannot read"));
  }
  if (text.size() > Limits::kMaxConfigFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": larger than the config size limit of ",
                     Limits::kMaxConfigFileBytes, " bytes"));
  }
  return text;
}

absl::StatusOr<ModelConfig> LoadModelConfig(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadConfigText(path));
  return ParseModelConfig(text, path);
}

absl::StatusOr<std::vector<std::string>> ApplyModelConfigOverlay(
    absl::string_view json_text, absl::string_view source_name,
    absl::Span<const absl::string_view> allowed, ModelConfig* config) {
  ASSIGN_OR_RETURN(Json json, ParseJsonObject(json_text, source_name));
  std::vector<std::string> set;
  for (const auto& [key, value] : json.items()) {
    if (IsCommentField(key)) continue;
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          source_name, ": field '", key, "' is not one an overlay may set (",
          absl::StrJoin(allowed, ", "),
          "); the model's own config.json says the rest"));
    }
    if (value.is_object()) {
      for (const auto& [nested, unused] : value.items()) {
        if (!IsCommentField(nested)) set.push_back(absl::StrCat(key, ".", nested));
      }
    } else {
      set.push_back(key);
    }
  }
  FieldReader reader(json, "");
  absl::Status status = ReadFields(reader, *config);
  if (status.ok()) status = reader.RejectUnknown(IsCommentField);
  if (status.ok()) status = ValidateModelConfig(*config);
  if (!status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat(source_name, ": ", status.message()));
  }
  return set;
}

}  // namespace favor::model
