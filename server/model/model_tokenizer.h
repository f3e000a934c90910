// The tokenizer a model's config.json names ("tokenizer": docs/models.md),
// loaded from the model's folder with server/tokenizer's loader. The model
// loader (Model::Load) calls it once per model; the service then tokenises
// text inputs with it.
//
// LibTorch-free.
#ifndef FAVOR_SERVER_MODEL_MODEL_TOKENIZER_H_
#define FAVOR_SERVER_MODEL_MODEL_TOKENIZER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/model/model_config.h"
#include "server/tokenizer/load_tokenizer.h"
#include "server/tokenizer/tokenizer.h"

namespace favor::model {

// What server/tokenizer's loader needs to read config.tokenizer's file in
// `directory`; INVALID_ARGUMENT when the config names no file.
absl::StatusOr<tokenizer::TokenizerSpec> TokenizerSpecOf(
    const std::string& directory, const TokenizerConfig& config);

// The tokenizer of the model in `directory`, or null when its config names
// none. Errors start with the file's path: NOT_FOUND when it is missing,
// INVALID_ARGUMENT when it is not a tokenizer of its kind or when it makes
// ids the model cannot read (its vocabulary is larger than vocab_size).
absl::StatusOr<std::shared_ptr<const tokenizer::Tokenizer>> LoadModelTokenizer(
    const std::string& directory, const ModelConfig& config);

}  // namespace favor::model

#endif  // FAVOR_SERVER_MODEL_MODEL_TOKENIZER_H_
