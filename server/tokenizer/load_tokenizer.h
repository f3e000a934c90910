// Loading a tokenizer from a model folder's file: Hugging Face's
// tokenizer.json (WordPiece models), BERT's plain vocab.txt, or a
// SentencePiece .model. docs/tokenizers.md says what each supports.
#ifndef FAVOR_SERVER_TOKENIZER_LOAD_TOKENIZER_H_
#define FAVOR_SERVER_TOKENIZER_LOAD_TOKENIZER_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/tokenizer/bert_normalizer.h"
#include "server/tokenizer/tokenizer.h"
#include "server/tokenizer/wordpiece.h"

namespace favor::tokenizer {

enum class TokenizerFormat {
  kTokenizerJson,  // "tokenizer.json": Hugging Face's serialised pipeline
  kVocabTxt,       // "vocab.txt": one WordPiece piece a line, line = id
  kSentencePiece,  // "sentencepiece": a SentencePiece .model
};
absl::string_view NameOf(TokenizerFormat format);
// The inverse of NameOf; INVALID_ARGUMENT listing the names otherwise.
absl::StatusOr<TokenizerFormat> ParseTokenizerFormat(absl::string_view name);

// What a vocab.txt does not say, which a tokenizer.json would: BERT's
// defaults (bert-base-uncased). The special tokens that are in the
// vocabulary become added tokens, as Hugging Face's BertTokenizerFast makes
// them, and [CLS] / [SEP] frame every encoding.
struct VocabTxtOptions {
  BertNormalizer::Options normalizer;
  WordPiece::Options wordpiece;
  std::string cls_token = "[CLS]";
  std::string sep_token = "[SEP]";
  std::string pad_token = "[PAD]";
  std::string mask_token = "[MASK]";
};

// SentencePiece's own encode adds neither; models that expect <s> or </s>
// around the text say so here.
struct SentencePieceOptions {
  bool add_bos = false;
  bool add_eos = false;
};

struct TokenizerSpec {
  TokenizerFormat format = TokenizerFormat::kTokenizerJson;
  std::string path;
  VocabTxtOptions vocab_txt;           // kVocabTxt only
  SentencePieceOptions sentencepiece;  // kSentencePiece only
  // Files above this size are refused before they are read, so a hostile
  // or mistaken path cannot exhaust memory. Real ones are far smaller:
  // bert-base-uncased's tokenizer.json is 0.7 MB, XLM-R's .model 5 MB.
  size_t max_file_bytes = size_t{256} << 20;
  // The model's vocab_size, when the caller knows it (0: unknown): a
  // tokenizer with more ids is refused. A vocab.txt's lines are counted, and
  // a tokenizer.json's JSON values (MaxTokenizerJsonValues) while it is
  // parsed, so that a mistaken file near max_file_bytes is refused before it
  // takes gigabytes (parsed, a tokenizer.json takes ~7 times its bytes).
  size_t max_vocab_size = 0;
};

// The JSON values a tokenizer.json of `vocab_size` ids may hold, with room
// to spare: 32 an id (a BPE id's vocab entry and merge take up to 4 values,
// an added token 8) and 2^20 for the stages' settings.
size_t MaxTokenizerJsonValues(size_t vocab_size);

// NOT_FOUND when the file does not exist; INVALID_ARGUMENT, naming the file
// and what is wrong, when it is too large, not a regular file, or not a
// tokenizer of the named format (bad JSON, wrong types, out-of-range
// numbers, unsupported stages, missing special tokens, invalid UTF-8).
absl::StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(
    const TokenizerSpec& spec);

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_LOAD_TOKENIZER_H_
