// sentence-transformers' files in a Hugging Face folder, as the library
// reads them (SentenceTransformer.py, models/Pooling.py): modules.json
// lists the pipeline (Transformer, Pooling, Normalize, ...),
// 1_Pooling/config.json (or the Pooling module's own folder) says how token
// vectors become one, sentence_bert_config.json the longest input.
//
// No LibTorch.
#ifndef FAVOR_SERVER_MODEL_HF_SENTENCE_TRANSFORMERS_H_
#define FAVOR_SERVER_MODEL_HF_SENTENCE_TRANSFORMERS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/model/model_config.h"

namespace favor::model::hf {

// Applies `directory`'s sentence-transformers settings to `config`: the
// pooling, L2 normalisation when the pipeline ends in Normalize, and
// max_seq_length (never past the model's own limit). Adds the files it
// read to `files` (relative to the folder). A folder without modules.json
// changes nothing. INVALID_ARGUMENT naming the file for a module or a
// pooling mode Favor does not run (a Dense layer after pooling, weighted
// mean, several modes at once).
absl::Status ApplySentenceTransformers(const std::string& directory,
                                       ModelConfig* config,
                                       std::vector<std::string>* files);

// config_sentence_transformers.json's "prompts" (name → text, each valid
// UTF-8) and "default_prompt_name" (one of them, or null). A folder
// without the file has none. Adds the file to `files`. INVALID_ARGUMENT
// naming the file and the field otherwise.
absl::Status ReadPrompts(const std::string& directory,
                         std::map<std::string, std::string>* prompts,
                         std::string* default_prompt_name,
                         std::vector<std::string>* files);

}  // namespace favor::model::hf

#endif  // FAVOR_SERVER_MODEL_HF_SENTENCE_TRANSFORMERS_H_
