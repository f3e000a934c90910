#include "server/model/model_tokenizer.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"

namespace favor::model {
namespace {

tokenizer::VocabTxtOptions VocabTxtOptionsOf(const TokenizerConfig& config) {
  tokenizer::VocabTxtOptions options;
  options.normalizer.clean_text = config.clean_text;
  options.normalizer.handle_chinese_chars = config.handle_chinese_chars;
  options.normalizer.lowercase = config.lowercase;
  switch (config.strip_accents) {
    case AccentStripping::kAsLowercase:
      options.normalizer.strip_accents = std::nullopt;
      break;
    case AccentStripping::kStrip:
      options.normalizer.strip_accents = true;
      break;
    case AccentStripping::kKeep:
      options.normalizer.strip_accents = false;
      break;
  }
  options.wordpiece.unk_token = config.unk_token;
  options.wordpiece.continuing_subword_prefix =
      config.continuing_subword_prefix;
  options.wordpiece.max_input_chars_per_word =
      static_cast<int>(config.max_input_chars_per_word);
  options.cls_token = config.cls_token;
  options.sep_token = config.sep_token;
  options.pad_token = config.pad_token;
  options.mask_token = config.mask_token;
  return options;
}

}  // namespace

absl::StatusOr<tokenizer::TokenizerSpec> TokenizerSpecOf(
    const std::string& directory, const TokenizerConfig& config) {
  tokenizer::TokenizerSpec spec;
  spec.path = absl::StrCat(directory, "/", config.file);
  switch (TokenizerFileTypeOf(config)) {
    case TokenizerFileType::kTokenizerJson:
      spec.format = tokenizer::TokenizerFormat::kTokenizerJson;
      return spec;
    case TokenizerFileType::kVocabTxt:
      spec.format = tokenizer::TokenizerFormat::kVocabTxt;
      spec.vocab_txt = VocabTxtOptionsOf(config);
      return spec;
    case TokenizerFileType::kSentencePiece:
      spec.format = tokenizer::TokenizerFormat::kSentencePiece;
      spec.sentencepiece.add_bos = config.add_bos;
      spec.sentencepiece.add_eos = config.add_eos;
      return spec;
    case TokenizerFileType::kNone:
    case TokenizerFileType::kUnknown:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "tokenizer.file \"", config.file, "\" names no tokenizer file"));
}

absl::StatusOr<std::shared_ptr<const tokenizer::Tokenizer>> LoadModelTokenizer(
    const std::string& directory, const ModelConfig& config) {
  if (TokenizerFileTypeOf(config.tokenizer) == TokenizerFileType::kNone) {
    return std::shared_ptr<const tokenizer::Tokenizer>();
  }
  ASSIGN_OR_RETURN(tokenizer::TokenizerSpec spec,
                   TokenizerSpecOf(directory, config.tokenizer));
  // Its ids must be below vocab_size (at least 1 in a valid config).
  spec.max_vocab_size =
      static_cast<size_t>(std::max<int64_t>(config.vocab_size, 1));
  ASSIGN_OR_RETURN(std::unique_ptr<tokenizer::Tokenizer> loaded,
                   tokenizer::LoadTokenizer(spec));
  return std::shared_ptr<const tokenizer::Tokenizer>(std::move(loaded));
}

absl::Status AdoptSpecialTokenIds(const tokenizer::Tokenizer& tokenizer,
                                  ModelConfig* config) {
  if (tokenizer.kind() == "wordpiece") {
    const tokenizer::Framing framing = tokenizer::FramingOf(tokenizer);
    const std::tuple<const char*, const std::vector<tokenizer::SpecialToken>*,
                     int64_t*>
        sides[] = {{"cls_token_id", &framing.before, &config->cls_token_id},
                   {"sep_token_id", &framing.after, &config->sep_token_id}};
    for (const auto& [name, tokens, id] : sides) {
      if (tokens->size() != 1) continue;  // a template of its own
      const tokenizer::SpecialToken& token = tokens->front();
      if (*id == -1) {
        *id = token.id;
      } else if (*id != token.id) {
        return absl::InvalidArgumentError(absl::StrCat(
            "config.json's ", name, " is ", *id,
            ", but the tokenizer frames every text with ", token.content,
            " = ", token.id,
            ": token-id and text inputs would be framed differently"));
      }
    }
  }
  const std::pair<const std::string*, int64_t*> named[] = {
      {&config->tokenizer.unk_token, &config->unk_token_id},
      {&config->tokenizer.mask_token, &config->mask_token_id}};
  for (const auto& [token, id] : named) {
    if (*id != -1) continue;
    const std::optional<int32_t> found = tokenizer.TokenToId(*token);
    if (found.has_value()) *id = *found;
  }
  return absl::OkStatus();
}

}  // namespace favor::model
