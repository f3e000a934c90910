#include "server/model/model_folder.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "server/common/json_parse.h"
#include "server/common/status_macros.h"
#include "server/model/hf/hf_architecture.h"
#include "server/model/hf/hf_config.h"
#include "server/model/hf/sentence_transformers.h"

namespace favor::model {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

constexpr absl::string_view kOverlayFile = "favor.json";

// What favor.json may set: Favor's own choices, not the trained model's.
constexpr absl::string_view kOverlayFields[] = {
    "version", "attention", "max_sequence_length", "pooling", "normalize"};

// Fields of Favor's schema that no Hugging Face config has: a config.json
// with any of them is Favor's own (an extended BERT config), whatever its
// model_type says. (norm_bias is both Favor's and ModernBERT's.)
constexpr absl::string_view kFavorOnlyFields[] = {
    "version",     "norm",     "norm_placement",      "rotary_base",
    "max_sequence_length",     "attention",           "block",
    "num_latents", "num_inducing_points", "pooling",  "normalize",
    "tokenizer",   "position_ids", "feed_forward", "linear_bias",
    "local_attention_window", "global_attention_every_n_layers",
    "local_rotary_base", "first_layer_attention_norm"};

bool IsHuggingFace(const Json& config) {
  if (!config.contains("model_type")) return false;
  return std::none_of(
      std::begin(kFavorOnlyFields), std::end(kFavorOnlyFields),
      [&](absl::string_view field) {
        return config.contains(std::string(field));
      });
}

bool Exists(const std::string& path) {
  std::error_code error;
  return fs::exists(path, error);
}

// tokenizer.json when the folder has one, else BERT's vocab.txt with
// tokenizer_config.json's casing; none: token ids only.
absl::Status ChooseTokenizer(const std::string& directory, ModelConfig* config,
                             std::vector<std::string>* files) {
  TokenizerConfig& tokenizer = config->tokenizer;
  if (Exists(directory + "/tokenizer.json")) {
    tokenizer.file = "tokenizer.json";
  } else if (Exists(directory + "/vocab.txt")) {
    tokenizer.file = "vocab.txt";
    const std::string source = directory + "/tokenizer_config.json";
    if (Exists(source)) {
      ASSIGN_OR_RETURN(const std::string text, ReadConfigText(source));
      ASSIGN_OR_RETURN(const Json settings, ParseJsonObject(text, source));
      const auto lower = settings.find("do_lower_case");
      if (lower != settings.end() && lower->is_boolean()) {
        tokenizer.lowercase = lower->get<bool>();
      }
      files->push_back("tokenizer_config.json");
    }
  } else {
    return absl::OkStatus();
  }
  files->push_back(tokenizer.file);
  return absl::OkStatus();
}

absl::Status ApplyOverlay(const std::string& directory, ModelFolder* folder) {
  const std::string source = absl::StrCat(directory, "/", kOverlayFile);
  if (!Exists(source)) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::string text, ReadConfigText(source));
  // "dtype" is a load option, not a config field (Model::Load reads it).
  ASSIGN_OR_RETURN(Json overlay, ParseJsonObject(text, source));
  const auto dtype = overlay.find("dtype");
  if (dtype != overlay.end()) {
    if (!dtype->is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": field 'dtype' must be a string, got ", DescribeJson(*dtype)));
    }
    folder->dtype = dtype->get<std::string>();
    overlay.erase(dtype);
    text = overlay.dump();
  }
  ASSIGN_OR_RETURN(folder->overlay_fields,
                   ApplyModelConfigOverlay(text, source, kOverlayFields,
                                           &folder->config));
  if (!folder->dtype.empty()) folder->overlay_fields.push_back("dtype");
  folder->files.push_back(std::string(kOverlayFile));
  return absl::OkStatus();
}

absl::StatusOr<ModelFolder> ReadHuggingFace(const std::string& directory,
                                            const std::string& source,
                                            Json json) {
  const hf::HfConfig hf(std::move(json), source);
  ASSIGN_OR_RETURN(const hf::HfArchitecture* architecture,
                   hf::FindHfArchitecture(hf));
  ModelFolder folder;
  folder.format = FolderFormat::kHuggingFace;
  folder.architecture = std::string(architecture->classes[0]);
  folder.weight_prefix = std::string(architecture->weight_prefix);
  folder.files = {"config.json", "model.safetensors"};
  RETURN_IF_ERROR(architecture->adapt(hf, &folder.config));
  if (architecture->aliases != nullptr) {
    folder.aliases = architecture->aliases(folder.config);
  }
  for (absl::string_view root : architecture->encoder_roots) {
    folder.encoder_roots.emplace_back(root);
  }
  RETURN_IF_ERROR(ChooseTokenizer(directory, &folder.config, &folder.files));
  RETURN_IF_ERROR(hf::ApplySentenceTransformers(directory, &folder.config,
                                                &folder.files));
  RETURN_IF_ERROR(hf::ReadPrompts(directory, &folder.prompts,
                                  &folder.default_prompt_name, &folder.files));
  absl::Status valid = ValidateModelConfig(folder.config);
  if (!valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": as Favor reads it, ", valid.message()));
  }
  RETURN_IF_ERROR(ApplyOverlay(directory, &folder));
  std::sort(folder.files.begin(), folder.files.end());
  return folder;
}

}  // namespace

absl::string_view NameOf(FolderFormat format) {
  return format == FolderFormat::kFavor ? "favor" : "huggingface";
}

absl::StatusOr<ModelFolder> ReadModelFolder(const std::string& directory) {
  const std::string source = directory + "/config.json";
  ASSIGN_OR_RETURN(const std::string text, ReadConfigText(source));
  ASSIGN_OR_RETURN(Json json, ParseJsonObject(text, source));
  if (IsHuggingFace(json)) {
    return ReadHuggingFace(directory, source, std::move(json));
  }
  ModelFolder folder;
  ASSIGN_OR_RETURN(folder.config, ParseModelConfig(text, source));
  folder.files = {"config.json", "model.safetensors"};
  if (!folder.config.tokenizer.file.empty()) {
    folder.files.push_back(folder.config.tokenizer.file);
  }
  std::sort(folder.files.begin(), folder.files.end());
  return folder;
}

absl::StatusOr<WeightNaming> PrepareWeights(const ModelFolder& folder,
                                            SafetensorsFile* file) {
  WeightNaming naming;
  if (folder.format != FolderFormat::kHuggingFace) return naming;
  // The word embeddings, as the architecture's file names them, tell
  // whether its tensors are under the task model's prefix.
  std::string words = "embeddings.word_embeddings.weight";
  for (const TensorAlias& alias : folder.aliases) {
    if (alias.name == words) words = alias.source;
  }
  if (!folder.weight_prefix.empty() &&
      file->Contains(folder.weight_prefix + words)) {
    naming.prefix = folder.weight_prefix;
  }
  std::vector<TensorAlias> aliases = folder.aliases;
  for (TensorAlias& alias : aliases) {
    alias.name = naming.prefix + alias.name;
    alias.source = naming.prefix + alias.source;
  }
  RETURN_IF_ERROR(file->Remap(aliases));
  // What lies outside the encoder (a task head, the position_ids buffer
  // that older checkpoints store) is not Favor's to run; anything unknown
  // inside it would change the forward pass and stays an error.
  naming.ignore = [prefix = naming.prefix,
                   roots = folder.encoder_roots](absl::string_view name) {
    if (name == absl::StrCat(prefix, "embeddings.position_ids")) return true;
    return std::none_of(roots.begin(), roots.end(),
                        [&](const std::string& root) {
                          return absl::StartsWith(name,
                                                  absl::StrCat(prefix, root));
                        });
  };
  return naming;
}

}  // namespace favor::model
