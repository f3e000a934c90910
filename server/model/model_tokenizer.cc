#include "server/model/model_tokenizer.h"

#include <cstdint>
#include <utility>

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
  ASSIGN_OR_RETURN(const tokenizer::TokenizerSpec spec,
                   TokenizerSpecOf(directory, config.tokenizer));
  ASSIGN_OR_RETURN(std::unique_ptr<tokenizer::Tokenizer> loaded,
                   tokenizer::LoadTokenizer(spec));
  const int64_t size = static_cast<int64_t>(loaded->vocab_size());
  if (size > config.vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        spec.path, ": the tokenizer has ", size,
        " token ids, more than the model's vocab_size (", config.vocab_size,
        "): its ids must all be below vocab_size"));
  }
  return std::shared_ptr<const tokenizer::Tokenizer>(std::move(loaded));
}

}  // namespace favor::model
