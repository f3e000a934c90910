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

// Fills the special-token ids that `config` leaves at -1 from the model's
// tokenizer, so that GetModel reports the ids the server itself frames texts
// with (clients framing token-id inputs read them):
// - cls_token_id and sep_token_id: the tokens a WordPiece tokenizer puts
//   before and after every text (BERT's [CLS] and [SEP]);
// - unk_token_id and mask_token_id: the ids of config.tokenizer's unk_token
//   and mask_token, where the vocabulary has them.
// pad_token_id (default 0, as Hugging Face's) is left as the config says.
// INVALID_ARGUMENT when the config names a cls or sep id other than the one
// the tokenizer frames texts with: token-id and text inputs would then be
// framed differently.
absl::Status AdoptSpecialTokenIds(const tokenizer::Tokenizer& tokenizer,
                                  ModelConfig* config);

}  // namespace favor::model

#endif  // FAVOR_SERVER_MODEL_MODEL_TOKENIZER_H_
