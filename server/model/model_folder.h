// What a folder of the model repository holds, whichever of the two formats
// it is in (docs/models.md, "Model folders"):
//
//   - Favor's own: config.json in Favor's schema (model_config.h) beside
//     model.safetensors;
//   - a Hugging Face folder as downloaded: config.json with a "model_type"
//     (and none of Favor's own fields), model.safetensors, tokenizer.json
//     (or vocab.txt), and where present sentence-transformers' files
//     (modules.json, 1_Pooling/config.json, sentence_bert_config.json).
//     One adapter per architecture (hf/hf_architecture.h) maps its config
//     onto a ModelConfig; nothing in the folder is edited. Favor's own
//     choices (the attention kernel and its parameters, the longest input,
//     pooling, the dtype, a version) go in an optional favor.json beside it
//     that holds
//     only what differs. Without one the model runs as it was trained:
//     exact softmax attention, up to its position table.
//
// No LibTorch: the service and the tools read folders too.
#ifndef FAVOR_SERVER_MODEL_MODEL_FOLDER_H_
#define FAVOR_SERVER_MODEL_MODEL_FOLDER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/model/model_config.h"
#include "server/model/safetensors.h"
#include "server/model/weight_layout.h"

namespace favor::model {

enum class FolderFormat { kFavor, kHuggingFace };

struct ModelFolder {
  FolderFormat format = FolderFormat::kFavor;
  // Validated, the overlay applied.
  ModelConfig config;
  // Hugging Face only: the architecture ("BertModel") and the fields
  // favor.json set ("attention.kernel", ...); the prefix under which a task
  // model's file holds the encoder ("bert."), used when the file has it.
  std::string architecture;
  std::vector<std::string> overlay_fields;
  // favor.json's "dtype" ("float32", "bfloat16", "float16", "int8"): the dtype this
  // model computes in, over the server's; empty: the server's.
  std::string dtype;
  std::string weight_prefix;
  // How the architecture's tensors become Favor's (names without the
  // prefix); empty when its names are BERT's already.
  std::vector<TensorAlias> aliases;
  // Where the encoder's tensors are (hf_architecture.h).
  std::vector<std::string> encoder_roots = {"embeddings.", "encoder."};
  // sentence-transformers' prompts and default prompt name
  // (config_sentence_transformers.json); Hugging Face folders only.
  std::map<std::string, std::string> prompts;
  std::string default_prompt_name;
  // The files the model is made from, relative to the folder, sorted: what
  // its revision hashes (model_fingerprint.h).
  std::vector<std::string> files;
};

// Reads `directory`'s config (and for a Hugging Face folder its overlay and
// sentence-transformers' files). INVALID_ARGUMENT naming the file and the
// field for anything malformed, for an architecture without an adapter (the
// message lists those Favor has) and for a value the adapter does not
// implement; NOT_FOUND when config.json is missing.
absl::StatusOr<ModelFolder> ReadModelFolder(const std::string& directory);

// Presents `file` (`folder`'s model.safetensors) in Favor's names, through
// the architecture's aliases, and returns how it spells them: under the
// architecture's prefix when the file has it (a task model's weights), else
// unprefixed; a Hugging Face file's tensors outside the encoder (task
// heads, buffers) are ignored. Errors name the file and the tensor.
absl::StatusOr<WeightNaming> PrepareWeights(const ModelFolder& folder,
                                            SafetensorsFile* file);

absl::string_view NameOf(FolderFormat format);  // "favor", "huggingface"

}  // namespace favor::model

#endif  // FAVOR_SERVER_MODEL_MODEL_FOLDER_H_
