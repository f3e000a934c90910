#include "server/model/model_config.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "server/common/status_macros.h"
#include "server/model/json_parse.h"

namespace favor::model {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;
using Limits = ModelConfigLimits;
using RowNorm = attention::ProjectionOptions::RowNorm;

// ---- Enum names ----

template <typename T>
struct EnumName {
  T value;
  absl::string_view name;
};

// The first name of a value is how it is written; later ones are aliases
// accepted when reading.
constexpr EnumName<Activation> kActivations[] = {
    {Activation::kGelu, "gelu"},
    {Activation::kGeluTanh, "gelu_tanh"},
    {Activation::kRelu, "relu"},
    {Activation::kGeluTanh, "gelu_new"},
    {Activation::kGeluTanh, "gelu_pytorch_tanh"},
};
constexpr EnumName<NormType> kNorms[] = {{NormType::kLayerNorm, "layer_norm"},
                                         {NormType::kScaleNorm, "scale_norm"}};
constexpr EnumName<NormPlacement> kPlacements[] = {
    {NormPlacement::kPost, "post"}, {NormPlacement::kPre, "pre"}};
constexpr EnumName<PositionEmbedding> kPositions[] = {
    {PositionEmbedding::kAbsolute, "absolute"},
    {PositionEmbedding::kRotary, "rotary"},
    {PositionEmbedding::kNone, "none"}};
constexpr EnumName<BlockType> kBlocks[] = {
    {BlockType::kEncoder, "encoder"},
    {BlockType::kCrossAttention, "cross_attention"},
    {BlockType::kIsab, "isab"}};
constexpr EnumName<Pooling> kPoolings[] = {{Pooling::kMean, "mean"},
                                           {Pooling::kCls, "cls"},
                                           {Pooling::kAttention, "attention"},
                                           {Pooling::kNone, "none"}};
constexpr EnumName<RowNorm> kRowNorms[] = {{RowNorm::kChi, "chi"},
                                           {RowNorm::kSqrtDim, "sqrt_dim"}};

template <typename T, size_t N>
absl::string_view FindName(const EnumName<T> (&table)[N], T value) {
  for (const auto& entry : table) {
    if (entry.value == value) return entry.name;
  }
  return "unknown";
}

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

// ---- Reading fields ----

// Reads typed fields of one JSON object and remembers which it read, so that
// the rest can be reported as unknown. Messages name the field with its
// prefix ("attention.kernel").
class FieldReader {
 public:
  FieldReader(const Json& object, std::string prefix)
      : object_(object), prefix_(std::move(prefix)) {}

  absl::Status Int(absl::string_view key, int64_t& out);
  absl::Status UInt(absl::string_view key, uint64_t& out);
  absl::Status Double(absl::string_view key, double& out);
  absl::Status Bool(absl::string_view key, bool& out);
  absl::Status String(absl::string_view key, std::string& out);
  template <typename T, size_t N>
  absl::Status Enum(absl::string_view key, const EnumName<T> (&table)[N],
                    T& out);
  absl::Status Kernel(absl::string_view key, attention::Kernel& out);
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

absl::Status FieldReader::Int(absl::string_view key, int64_t& out) {
  const Json* value = Find(key);
  if (value == nullptr) return absl::OkStatus();
  const bool fits =
      value->is_number_integer() &&
      (!value->is_number_unsigned() ||
       value->get<uint64_t>() <= uint64_t{std::numeric_limits<int64_t>::max()});
  if (!fits) return Wrong(key, "a 64-bit integer", *value);
  out = value->get<int64_t>();
  return absl::OkStatus();
}

absl::Status FieldReader::UInt(absl::string_view key, uint64_t& out) {
  const Json* value = Find(key);
  if (value == nullptr) return absl::OkStatus();
  if (!value->is_number_unsigned()) {
    return Wrong(key, "a non-negative 64-bit integer", *value);
  }
  out = value->get<uint64_t>();
  return absl::OkStatus();
}

absl::Status FieldReader::Double(absl::string_view key, double& out) {
  const Json* value = Find(key);
  if (value == nullptr) return absl::OkStatus();
  if (!value->is_number()) return Wrong(key, "a number", *value);
  out = value->get<double>();
  return absl::OkStatus();
}

absl::Status FieldReader::Bool(absl::string_view key, bool& out) {
  const Json* value = Find(key);
  if (value == nullptr) return absl::OkStatus();
  if (!value->is_boolean()) return Wrong(key, "true or false", *value);
  out = value->get<bool>();
  return absl::OkStatus();
}

absl::Status FieldReader::String(absl::string_view key, std::string& out) {
  const Json* value = Find(key);
  if (value == nullptr) return absl::OkStatus();
  if (!value->is_string()) return Wrong(key, "a string", *value);
  out = value->get<std::string>();
  return absl::OkStatus();
}

template <typename T, size_t N>
absl::Status FieldReader::Enum(absl::string_view key,
                               const EnumName<T> (&table)[N], T& out) {
  const Json* value = Find(key);
  if (value == nullptr) return absl::OkStatus();
  std::vector<std::string> names;
  for (const auto& entry : table) {
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

absl::Status FieldReader::Kernel(absl::string_view key,
                                 attention::Kernel& out) {
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

bool IsCommentField(absl::string_view key) {
  return absl::StartsWith(key, "_");
}

bool IsIgnoredTopLevelField(absl::string_view key) {
  return IsCommentField(key) || IgnoredFields().count(key) > 0;
}

absl::Status ReadAttention(const Json& object, AttentionConfig& attention) {
  FieldReader reader(object, "attention.");
  RETURN_IF_ERROR(reader.Kernel("kernel", attention.kernel));
  RETURN_IF_ERROR(
      reader.Int("num_random_features", attention.num_random_features));
  RETURN_IF_ERROR(reader.Bool("orthogonal", attention.orthogonal));
  RETURN_IF_ERROR(reader.Enum("row_norm", kRowNorms, attention.row_norm));
  RETURN_IF_ERROR(reader.UInt("projection_seed", attention.projection_seed));
  RETURN_IF_ERROR(reader.Bool("causal", attention.causal));
  RETURN_IF_ERROR(reader.Double("feature_epsilon", attention.feature_epsilon));
  return reader.RejectUnknown(IsCommentField);
}

absl::Status ReadVocabularyAndShape(FieldReader& reader, ModelConfig& config) {
  RETURN_IF_ERROR(reader.String("version", config.version));
  RETURN_IF_ERROR(reader.Int("vocab_size", config.vocab_size));
  RETURN_IF_ERROR(reader.Int("type_vocab_size", config.type_vocab_size));
  RETURN_IF_ERROR(reader.Int("pad_token_id", config.pad_token_id));
  RETURN_IF_ERROR(reader.Int("unk_token_id", config.unk_token_id));
  RETURN_IF_ERROR(reader.Int("cls_token_id", config.cls_token_id));
  RETURN_IF_ERROR(reader.Int("sep_token_id", config.sep_token_id));
  RETURN_IF_ERROR(reader.Int("mask_token_id", config.mask_token_id));
  RETURN_IF_ERROR(reader.Int("hidden_size", config.hidden_size));
  RETURN_IF_ERROR(reader.Int("num_hidden_layers", config.num_hidden_layers));
  RETURN_IF_ERROR(
      reader.Int("num_attention_heads", config.num_attention_heads));
  RETURN_IF_ERROR(reader.Int("intermediate_size", config.intermediate_size));
  RETURN_IF_ERROR(reader.Enum("hidden_act", kActivations, config.hidden_act));
  RETURN_IF_ERROR(reader.Enum("norm", kNorms, config.norm));
  RETURN_IF_ERROR(
      reader.Enum("norm_placement", kPlacements, config.norm_placement));
  return reader.Double("layer_norm_eps", config.layer_norm_eps);
}

absl::Status ReadRest(FieldReader& reader, ModelConfig& config) {
  RETURN_IF_ERROR(reader.Enum("position_embedding_type", kPositions,
                              config.position_embedding_type));
  RETURN_IF_ERROR(
      reader.Int("max_position_embeddings", config.max_position_embeddings));
  RETURN_IF_ERROR(reader.Double("rotary_base", config.rotary_base));
  RETURN_IF_ERROR(
      reader.Int("max_sequence_length", config.max_sequence_length));
  ASSIGN_OR_RETURN(const Json* attention, reader.Object("attention"));
  if (attention != nullptr) {
    RETURN_IF_ERROR(ReadAttention(*attention, config.attention));
  }
  RETURN_IF_ERROR(reader.Enum("block", kBlocks, config.block));
  RETURN_IF_ERROR(reader.Int("num_latents", config.num_latents));
  RETURN_IF_ERROR(
      reader.Int("num_inducing_points", config.num_inducing_points));
  RETURN_IF_ERROR(reader.Enum("pooling", kPoolings, config.pooling));
  return reader.Bool("normalize", config.normalize);
}

// ---- Validation ----

absl::Status Invalid(absl::string_view field, int64_t value,
                     absl::string_view requirement) {
  return absl::InvalidArgumentError(
      absl::StrCat("field '", field, "' is ", value, "; ", requirement));
}

absl::Status CheckRange(absl::string_view field, int64_t value, int64_t min,
                        int64_t max) {
  if (value >= min && value <= max) return absl::OkStatus();
  return Invalid(field, value,
                 absl::StrCat("must be in [", min, ", ", max, "]"));
}

absl::Status CheckTokenId(absl::string_view field, int64_t id,
                          int64_t vocab_size) {
  if (id == -1 || (id >= 0 && id < vocab_size)) return absl::OkStatus();
  return Invalid(
      field, id,
      absl::StrCat("must be -1 (none) or below vocab_size (", vocab_size, ")"));
}

absl::Status ValidateVocabulary(const ModelConfig& c) {
  if (c.version.size() > Limits::kMaxVersionBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("field 'version' is ", c.version.size(),
                     " bytes long; the limit is ", Limits::kMaxVersionBytes));
  }
  RETURN_IF_ERROR(
      CheckRange("vocab_size", c.vocab_size, 1, Limits::kMaxVocabSize));
  RETURN_IF_ERROR(CheckRange("type_vocab_size", c.type_vocab_size, 0,
                             Limits::kMaxTypeVocabSize));
  RETURN_IF_ERROR(CheckTokenId("pad_token_id", c.pad_token_id, c.vocab_size));
  RETURN_IF_ERROR(CheckTokenId("unk_token_id", c.unk_token_id, c.vocab_size));
  RETURN_IF_ERROR(CheckTokenId("cls_token_id", c.cls_token_id, c.vocab_size));
  RETURN_IF_ERROR(CheckTokenId("sep_token_id", c.sep_token_id, c.vocab_size));
  return CheckTokenId("mask_token_id", c.mask_token_id, c.vocab_size);
}

absl::Status CheckPositiveFinite(absl::string_view field, double value,
                                 double above) {
  if (std::isfinite(value) && value > above) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "field '", field, "' is ", value, "; must be finite and above ", above));
}

absl::Status ValidateShape(const ModelConfig& c) {
  RETURN_IF_ERROR(
      CheckRange("hidden_size", c.hidden_size, 1, Limits::kMaxHiddenSize));
  RETURN_IF_ERROR(CheckRange("num_hidden_layers", c.num_hidden_layers, 1,
                             Limits::kMaxLayers));
  RETURN_IF_ERROR(CheckRange("num_attention_heads", c.num_attention_heads, 1,
                             c.hidden_size));
  if (c.hidden_size % c.num_attention_heads != 0) {
    return Invalid("hidden_size", c.hidden_size,
                   absl::StrCat("must be divisible by num_attention_heads (",
                                c.num_attention_heads, ")"));
  }
  if (c.head_dim() > Limits::kMaxHeadDim) {
    return Invalid(
        "hidden_size", c.hidden_size,
        absl::StrCat("hidden_size / num_attention_heads = ", c.head_dim(),
                     " exceeds the head size limit ", Limits::kMaxHeadDim));
  }
  RETURN_IF_ERROR(CheckRange("intermediate_size", c.intermediate_size, 1,
                             Limits::kMaxIntermediateSize));
  return CheckPositiveFinite("layer_norm_eps", c.layer_norm_eps, 0.0);
}

absl::Status ValidatePositions(const ModelConfig& c) {
  RETURN_IF_ERROR(CheckRange("max_sequence_length", c.max_sequence_length, 1,
                             Limits::kMaxSequenceLength));
  switch (c.position_embedding_type) {
    case PositionEmbedding::kAbsolute:
      // A learned table has no row for a position past its end.
      if (c.max_position_embeddings < c.max_sequence_length) {
        return Invalid("max_position_embeddings", c.max_position_embeddings,
                       absl::StrCat("learned absolute positions need at least "
                                    "max_sequence_length (",
                                    c.max_sequence_length, ") rows"));
      }
      return CheckRange("max_position_embeddings", c.max_position_embeddings, 1,
                        Limits::kMaxSequenceLength);
    case PositionEmbedding::kRotary:
      if (c.block != BlockType::kEncoder) {
        return absl::InvalidArgumentError(absl::StrCat(
            "field 'position_embedding_type' is \"rotary\", which needs "
            "token-to-token attention; block \"",
            NameOf(c.block), "\" has none (use \"absolute\" or \"none\")"));
      }
      if (c.head_dim() % 2 != 0) {
        return Invalid("hidden_size", c.hidden_size,
                       absl::StrCat("rotary embeddings need an even head size"
                                    ", got ",
                                    c.head_dim()));
      }
      return CheckPositiveFinite("rotary_base", c.rotary_base, 1.0);
    case PositionEmbedding::kNone:
      break;
  }
  return absl::OkStatus();
}

absl::Status ValidateAttention(const ModelConfig& c) {
  const AttentionConfig& a = c.attention;
  if (attention::TraitsOf(a.kernel).uses_projection) {
    RETURN_IF_ERROR(CheckRange("attention.num_random_features",
                               a.num_random_features, 1,
                               Limits::kMaxRandomFeatures));
  }
  if (!std::isfinite(a.feature_epsilon) || a.feature_epsilon < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("field 'attention.feature_epsilon' is ", a.feature_epsilon,
                     "; must be finite and ≥ 0"));
  }
  if (a.causal && c.block != BlockType::kEncoder) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field 'attention.causal' is true, but block \"", NameOf(c.block),
        "\" has no token order to respect (causal needs block \"encoder\")"));
  }
  return absl::OkStatus();
}

absl::Status ValidateBlocks(const ModelConfig& c) {
  const bool cross = c.block == BlockType::kCrossAttention;
  const bool isab = c.block == BlockType::kIsab;
  RETURN_IF_ERROR(CheckRange("num_latents", c.num_latents, cross ? 1 : 0,
                             cross ? Limits::kMaxLatents : 0));
  return CheckRange("num_inducing_points", c.num_inducing_points, isab ? 1 : 0,
                    isab ? Limits::kMaxLatents : 0);
}

// ---- Writing ----

OrderedJson AttentionToJson(const AttentionConfig& a) {
  OrderedJson json;
  json["kernel"] = std::string(attention::KernelName(a.kernel));
  json["num_random_features"] = a.num_random_features;
  json["orthogonal"] = a.orthogonal;
  json["row_norm"] = std::string(NameOf(a.row_norm));
  json["projection_seed"] = a.projection_seed;
  json["causal"] = a.causal;
  json["feature_epsilon"] = a.feature_epsilon;
  return json;
}

void AddVocabularyAndShape(const ModelConfig& c, OrderedJson& json) {
  json["version"] = c.version;
  json["vocab_size"] = c.vocab_size;
  json["type_vocab_size"] = c.type_vocab_size;
  json["pad_token_id"] = c.pad_token_id;
  json["unk_token_id"] = c.unk_token_id;
  json["cls_token_id"] = c.cls_token_id;
  json["sep_token_id"] = c.sep_token_id;
  json["mask_token_id"] = c.mask_token_id;
  json["hidden_size"] = c.hidden_size;
  json["num_hidden_layers"] = c.num_hidden_layers;
  json["num_attention_heads"] = c.num_attention_heads;
  json["intermediate_size"] = c.intermediate_size;
  json["hidden_act"] = std::string(NameOf(c.hidden_act));
  json["norm"] = std::string(NameOf(c.norm));
  json["norm_placement"] = std::string(NameOf(c.norm_placement));
  json["layer_norm_eps"] = c.layer_norm_eps;
}

void AddRest(const ModelConfig& c, OrderedJson& json) {
  json["position_embedding_type"] =
      std::string(NameOf(c.position_embedding_type));
  json["max_position_embeddings"] = c.max_position_embeddings;
  json["rotary_base"] = c.rotary_base;
  json["max_sequence_length"] = c.max_sequence_length;
  json["attention"] = AttentionToJson(c.attention);
  json["block"] = std::string(NameOf(c.block));
  json["num_latents"] = c.num_latents;
  json["num_inducing_points"] = c.num_inducing_points;
  json["pooling"] = std::string(NameOf(c.pooling));
  json["normalize"] = c.normalize;
}

// ---- Expected weights ----

class WeightList {
 public:
  explicit WeightList(const ModelConfig& config) : config_(config) {}

  void Add(std::string name, std::vector<int64_t> shape, bool required = true) {
    tensors_.push_back({std::move(name), std::move(shape), required});
  }
  void Linear(const std::string& prefix, int64_t out, int64_t in) {
    Add(prefix + ".weight", {out, in});
    Add(prefix + ".bias", {out});
  }
  void Norm(const std::string& prefix) {
    if (config_.norm == NormType::kScaleNorm) {
      Add(prefix + ".scale", {1});
    } else {
      Add(prefix + ".weight", {config_.hidden_size});
      Add(prefix + ".bias", {config_.hidden_size});
    }
  }
  // One BERT-structured layer (attention, then feed-forward) under `prefix`.
  void Layer(const std::string& prefix);

  std::vector<ExpectedTensor> Take() { return std::move(tensors_); }

 private:
  const ModelConfig& config_;
  std::vector<ExpectedTensor> tensors_;
};

void WeightList::Layer(const std::string& prefix) {
  const int64_t hidden = config_.hidden_size;
  for (const char* projection : {"query", "key", "value"}) {
    Linear(absl::StrCat(prefix, ".attention.self.", projection), hidden,
           hidden);
  }
  const AttentionConfig& attention = config_.attention;
  if (attention::TraitsOf(attention.kernel).uses_projection) {
    Add(prefix + ".attention.self.projection",
        {attention.num_random_features, config_.head_dim()},
        /*required=*/false);
  }
  Linear(prefix + ".attention.output.dense", hidden, hidden);
  Norm(prefix + ".attention.output.LayerNorm");
  Linear(prefix + ".intermediate.dense", config_.intermediate_size, hidden);
  Linear(prefix + ".output.dense", hidden, config_.intermediate_size);
  Norm(prefix + ".output.LayerNorm");
}

}  // namespace

absl::string_view NameOf(Activation value) {
  return FindName(kActivations, value);
}
absl::string_view NameOf(NormType value) { return FindName(kNorms, value); }
absl::string_view NameOf(NormPlacement value) {
  return FindName(kPlacements, value);
}
absl::string_view NameOf(PositionEmbedding value) {
  return FindName(kPositions, value);
}
absl::string_view NameOf(BlockType value) { return FindName(kBlocks, value); }
absl::string_view NameOf(Pooling value) { return FindName(kPoolings, value); }
absl::string_view NameOf(RowNorm value) { return FindName(kRowNorms, value); }

absl::Status ValidateModelConfig(const ModelConfig& config) {
  RETURN_IF_ERROR(ValidateVocabulary(config));
  RETURN_IF_ERROR(ValidateShape(config));
  RETURN_IF_ERROR(ValidatePositions(config));
  RETURN_IF_ERROR(ValidateAttention(config));
  return ValidateBlocks(config);
}

absl::StatusOr<ModelConfig> ParseModelConfig(absl::string_view json_text,
                                             absl::string_view source_name) {
  ASSIGN_OR_RETURN(Json json, ParseJsonObject(json_text, source_name));
  ModelConfig config;
  FieldReader reader(json, "");
  absl::Status status = ReadVocabularyAndShape(reader, config);
  if (status.ok()) status = ReadRest(reader, config);
  if (status.ok()) status = reader.RejectUnknown(IsIgnoredTopLevelField);
  if (status.ok()) status = ValidateModelConfig(config);
  if (!status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat(source_name, ": ", status.message()));
  }
  return config;
}

absl::StatusOr<ModelConfig> LoadModelConfig(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat(path, ": cannot open"));
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
  return ParseModelConfig(text, path);
}

std::string ModelConfigToJson(const ModelConfig& config) {
  OrderedJson json = OrderedJson::object();
  AddVocabularyAndShape(config, json);
  AddRest(config, json);
  // replace: a version string set in code need not be valid UTF-8, and
  // dump must not throw.
  return json.dump(2, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
}

bool operator==(const AttentionConfig& a, const AttentionConfig& b) {
  return std::tie(a.kernel, a.num_random_features, a.orthogonal, a.row_norm,
                  a.projection_seed, a.causal, a.feature_epsilon) ==
         std::tie(b.kernel, b.num_random_features, b.orthogonal, b.row_norm,
                  b.projection_seed, b.causal, b.feature_epsilon);
}
bool operator!=(const AttentionConfig& a, const AttentionConfig& b) {
  return !(a == b);
}

bool operator==(const ModelConfig& a, const ModelConfig& b) {
  auto fields = [](const ModelConfig& c) {
    return std::tie(
        c.version, c.vocab_size, c.type_vocab_size, c.pad_token_id,
        c.unk_token_id, c.cls_token_id, c.sep_token_id, c.mask_token_id,
        c.hidden_size, c.num_hidden_layers, c.num_attention_heads,
        c.intermediate_size, c.hidden_act, c.norm, c.norm_placement,
        c.layer_norm_eps, c.position_embedding_type, c.max_position_embeddings,
        c.rotary_base, c.max_sequence_length, c.attention, c.block,
        c.num_latents, c.num_inducing_points, c.pooling, c.normalize);
  };
  return fields(a) == fields(b);
}
bool operator!=(const ModelConfig& a, const ModelConfig& b) {
  return !(a == b);
}

std::vector<ExpectedTensor> ExpectedWeights(const ModelConfig& config) {
  const int64_t hidden = config.hidden_size;
  WeightList list(config);
  list.Add("embeddings.word_embeddings.weight", {config.vocab_size, hidden});
  if (config.position_embedding_type == PositionEmbedding::kAbsolute) {
    list.Add("embeddings.position_embeddings.weight",
             {config.max_position_embeddings, hidden});
  }
  if (config.type_vocab_size > 0) {
    list.Add("embeddings.token_type_embeddings.weight",
             {config.type_vocab_size, hidden}, /*required=*/false);
  }
  list.Norm("embeddings.LayerNorm");
  if (config.block == BlockType::kCrossAttention) {
    list.Add("encoder.latents", {config.num_latents, hidden});
  }
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    const std::string prefix = absl::StrCat("encoder.layer.", layer);
    if (config.block == BlockType::kIsab) {
      list.Add(prefix + ".inducing_points",
               {config.num_inducing_points, hidden});
      list.Layer(prefix + ".induced");
    }
    list.Layer(prefix);
  }
  if (config.norm_placement == NormPlacement::kPre) {
    list.Norm("encoder.final_norm");
  }
  list.Add("pooler.query", {hidden},
           /*required=*/config.pooling == Pooling::kAttention);
  // BERT's tanh pooler: accepted so that BERT checkpoints load, never used.
  list.Add("pooler.dense.weight", {hidden, hidden}, /*required=*/false);
  list.Add("pooler.dense.bias", {hidden}, /*required=*/false);
  return list.Take();
}

}  // namespace favor::model
