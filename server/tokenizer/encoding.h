// What encoding a text produces: token ids, their strings and the byte span
// of each token in the input text, plus the per-call options (special tokens,
// truncation).
#ifndef FAVOR_SERVER_TOKENIZER_ENCODING_H_
#define FAVOR_SERVER_TOKENIZER_ENCODING_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace favor::tokenizer {

// A half-open byte range [begin, end) of the input text. Tokens that the
// post-processor adds ([CLS], [SEP], <s>, ...) come from no input text: their
// span is empty and at 0, {0, 0}, as Hugging Face gives (0, 0). Tokens split
// from one character (a Hangul syllable decomposes into jamo pieces) each
// carry the whole character's span, as Hugging Face does.
struct TokenSpan {
  size_t begin = 0;
  size_t end = 0;
  bool operator==(const TokenSpan& other) const {
    return begin == other.begin && end == other.end;
  }
};

// One encoded text, as parallel vectors indexed by token.
struct Encoding {
  std::vector<int32_t> ids;
  // Views into the tokenizer's vocabulary: valid while the Tokenizer lives.
  std::vector<absl::string_view> tokens;
  std::vector<TokenSpan> spans;
  // 1 for tokens the post-processor added, 0 for tokens of the text
  // (special tokens written in the text itself, "[MASK]", count as text).
  std::vector<uint8_t> special_tokens_mask;
  // Tokens of the text that truncation (EncodeOptions.max_tokens) dropped:
  // the text has size() - special tokens + num_truncated_tokens tokens.
  size_t num_truncated_tokens = 0;

  size_t size() const { return ids.size(); }
  void Append(int32_t id, absl::string_view token, TokenSpan span,
              bool special);
  // Drops `count` tokens from the front or the back.
  void EraseFront(size_t count);
  void EraseBack(size_t count);
};

enum class TruncationSide { kRight, kLeft };

struct EncodeOptions {
  // Whether the post-processor adds its special tokens ([CLS] ... [SEP]).
  bool add_special_tokens = true;
  // 0: no truncation. Otherwise the encoding has at most this many tokens,
  // special tokens included: tokens of the text are dropped from
  // `truncation_side` and the special tokens stay in place, as Hugging Face
  // truncates (counting the dropped ones in num_truncated_tokens). Below the
  // number of special tokens it is INVALID_ARGUMENT.
  size_t max_tokens = 0;
  TruncationSide truncation_side = TruncationSide::kRight;
};

// INVALID_ARGUMENT when options.max_tokens cannot hold the
// `added_special_tokens` that the post-processor will add.
absl::Status CheckTruncation(const EncodeOptions& options,
                             size_t added_special_tokens);
// Collects the tokens of a text as they are made, truncating as
// EncodeOptions says while it goes: the tokens truncation drops are counted
// (Encoding::num_truncated_tokens) but never held, so a text of millions of
// tokens truncated to a few hundred holds at most twice that many at any
// time. CheckTruncation must have passed.
class TruncatingAppender {
 public:
  // Room is left for the `added_special_tokens` the post-processor adds.
  TruncatingAppender(const EncodeOptions& options, size_t added_special_tokens,
                     Encoding* encoding);

  void Append(int32_t id, absl::string_view token, TokenSpan span,
              bool special);
  // Drops what is left to drop (left truncation keeps the last tokens).
  void Finish();

 private:
  size_t budget_;  // tokens of the text kept; SIZE_MAX without truncation
  bool keep_last_;
  Encoding* encoding_;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_ENCODING_H_
