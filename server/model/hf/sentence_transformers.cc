#include "server/model/hf/sentence_transformers.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/common/json_parse.h"
#include "server/common/status_macros.h"
#include "server/tokenizer/unicode.h"

namespace favor::model::hf {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

bool Exists(const std::string& path) {
  std::error_code error;
  return fs::exists(path, error);
}

// One module of modules.json: its class's last name ("Pooling") and folder.
struct Module {
  std::string type;
  std::string path;
};

absl::StatusOr<std::vector<Module>> ReadModules(const std::string& directory) {
  const std::string source = directory + "/modules.json";
  ASSIGN_OR_RETURN(const std::string text, ReadConfigText(source));
  ASSIGN_OR_RETURN(const Json list, ParseJsonValue(text, source));
  if (!list.is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": must be a JSON array of modules, got ", DescribeJson(list)));
  }
  std::vector<Module> modules;
  for (const Json& entry : list) {
    const auto type = entry.find("type");
    const auto path = entry.find("path");
    if (!entry.is_object() || type == entry.end() || !type->is_string() ||
        (path != entry.end() && !path->is_string())) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": each module is an object with a \"type\" string and a "
                  "\"path\" string, got ",
          Quote(entry.dump(), 100)));
    }
    const std::string folder =
        path == entry.end() ? "" : path->get<std::string>();
    // A module's folder is inside the model's: no way out of it.
    if (fs::path(folder).is_absolute() ||
        absl::StrContains(absl::StrCat("/", folder, "/"), "/../")) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": module path ", Quote(folder, 100),
          " leaves the model's folder"));
    }
    std::string name = type->get<std::string>();
    name = name.substr(name.rfind('.') + 1);  // sentence_transformers.models.X
    modules.push_back({name, folder});
  }
  return modules;
}

// The pooling of a Pooling module's config.json: one mode, one of Favor's.
absl::StatusOr<Pooling> PoolingOf(const std::string& source,
                                  const Json& config) {
  struct Mode {
    const char* key;
    std::optional<Pooling> pooling;  // nullopt: a mode Favor does not run
  };
  const Mode modes[] = {{"pooling_mode_cls_token", Pooling::kCls},
                        {"pooling_mode_mean_tokens", Pooling::kMean},
                        {"pooling_mode_max_tokens", Pooling::kMax},
                        {"pooling_mode_mean_sqrt_len_tokens", std::nullopt},
                        {"pooling_mode_weightedmean_tokens", std::nullopt},
                        {"pooling_mode_lasttoken", Pooling::kLastToken}};
  std::vector<const Mode*> chosen;
  for (const Mode& mode : modes) {
    const auto value = config.find(mode.key);
    if (value != config.end() && value->is_boolean() && value->get<bool>()) {
      chosen.push_back(&mode);
    }
  }
  if (chosen.size() != 1 || !chosen[0]->pooling.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source,
        ": Favor pools with exactly one of pooling_mode_cls_token, "
        "pooling_mode_mean_tokens, pooling_mode_max_tokens and "
        "pooling_mode_lasttoken; this asks for ",
        chosen.empty() ? "none" : chosen[0]->key,
        chosen.size() > 1 ? " and more" : ""));
  }
  return *chosen[0]->pooling;
}

absl::Status ApplyPooling(const std::string& directory, const Module& module,
                          ModelConfig* config,
                          std::vector<std::string>* files) {
  const std::string relative = module.path + "/config.json";
  const std::string source = directory + "/" + relative;
  ASSIGN_OR_RETURN(const std::string text, ReadConfigText(source));
  ASSIGN_OR_RETURN(const Json pooling, ParseJsonObject(text, source));
  ASSIGN_OR_RETURN(config->pooling, PoolingOf(source, pooling));
  const auto include_prompt = pooling.find("include_prompt");
  if (include_prompt != pooling.end() && include_prompt->is_boolean() &&
      !include_prompt->get<bool>()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": include_prompt is false; Favor pools over the prompt's "
                "tokens too (leaving them out is not implemented)"));
  }
  files->push_back(relative);
  return absl::OkStatus();
}

// sentence_bert_config.json's max_seq_length: inputs are cut there by
// sentence-transformers; Favor refuses longer ones unless asked to
// truncate. Never past the model's own limit.
absl::Status ApplyMaxSeqLength(const std::string& directory,
                               ModelConfig* config,
                               std::vector<std::string>* files) {
  const std::string source = directory + "/sentence_bert_config.json";
  if (!Exists(source)) return absl::OkStatus();
  ASSIGN_OR_RETURN(const std::string text, ReadConfigText(source));
  ASSIGN_OR_RETURN(const Json settings, ParseJsonObject(text, source));
  files->push_back("sentence_bert_config.json");
  const auto length = settings.find("max_seq_length");
  if (length == settings.end() || length->is_null()) return absl::OkStatus();
  if (!length->is_number_integer() || length->get<int64_t>() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": max_seq_length must be a positive integer, got ",
                     DescribeJson(*length)));
  }
  config->max_sequence_length =
      std::min(config->max_sequence_length, length->get<int64_t>());
  return absl::OkStatus();
}

// The longest prompt accepted, in bytes: prompts are short instructions.
constexpr size_t kMaxPromptBytes = 4096;

}  // namespace

absl::Status ReadPrompts(const std::string& directory,
                         std::map<std::string, std::string>* prompts,
                         std::string* default_prompt_name,
                         std::vector<std::string>* files) {
  const std::string relative = "config_sentence_transformers.json";
  const std::string source = directory + "/" + relative;
  if (!Exists(source)) return absl::OkStatus();
  ASSIGN_OR_RETURN(const std::string text, ReadConfigText(source));
  ASSIGN_OR_RETURN(const Json settings, ParseJsonObject(text, source));
  files->push_back(relative);
  const auto listed = settings.find("prompts");
  if (listed != settings.end() && !listed->is_null()) {
    if (!listed->is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": \"prompts\" must be an object of name to "
                               "text, got ",
                       DescribeJson(*listed)));
    }
    for (const auto& [name, prompt] : listed->items()) {
      if (!prompt.is_string() || prompt.get_ref<const std::string&>().size() >
                                     kMaxPromptBytes) {
        return absl::InvalidArgumentError(absl::StrCat(
            source, ": prompt ", Quote(name, 100), " must be a string of at "
            "most ", kMaxPromptBytes, " bytes, got ", DescribeJson(prompt)));
      }
      RETURN_IF_ERROR(tokenizer::ValidateUtf8(
          prompt.get_ref<const std::string&>(),
          absl::StrCat(source, ": prompt ", Quote(name, 100))));
      prompts->emplace(name, prompt.get<std::string>());
    }
  }
  const auto chosen = settings.find("default_prompt_name");
  if (chosen == settings.end() || chosen->is_null()) return absl::OkStatus();
  if (!chosen->is_string() ||
      prompts->count(chosen->get<std::string>()) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": \"default_prompt_name\" must name one of \"prompts\", got ",
        DescribeJson(*chosen)));
  }
  *default_prompt_name = chosen->get<std::string>();
  return absl::OkStatus();
}

absl::Status ApplySentenceTransformers(const std::string& directory,
                                       ModelConfig* config,
                                       std::vector<std::string>* files) {
  if (!Exists(directory + "/modules.json")) return absl::OkStatus();
  ASSIGN_OR_RETURN(const std::vector<Module> modules, ReadModules(directory));
  files->push_back("modules.json");
  config->normalize = false;
  for (const Module& module : modules) {
    if (module.type == "Transformer") continue;
    if (module.type == "Pooling") {
      RETURN_IF_ERROR(ApplyPooling(directory, module, config, files));
    } else if (module.type == "Normalize") {
      config->normalize = true;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          directory, "/modules.json: module \"", module.type,
          "\" is not one Favor runs (Transformer, Pooling, Normalize)"));
    }
  }
  return ApplyMaxSeqLength(directory, config, files);
}

}  // namespace favor::model::hf
