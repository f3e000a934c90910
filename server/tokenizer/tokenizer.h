// A loaded tokenizer: text → token ids, token strings and byte spans.
//
// Every implementation is immutable once loaded: Encode is const and may be
// called from many threads at once on one instance.
#ifndef FAVOR_SERVER_TOKENIZER_TOKENIZER_H_
#define FAVOR_SERVER_TOKENIZER_TOKENIZER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/tokenizer/encoding.h"

namespace favor::tokenizer {

// A token with a role (GetModel reports them): "[CLS]", "[UNK]", "<s>", ...
struct SpecialToken {
  std::string content;
  int32_t id = 0;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Encodes `text`. INVALID_ARGUMENT when the text is empty, longer than
  // kMaxTextBytes, or not valid UTF-8 (the message names the byte offset),
  // or when options.max_tokens leaves no room for the special tokens. The
  // tokens truncation drops are counted in the encoding's
  // num_truncated_tokens, never held: a caller that refuses texts over a
  // limit truncates at it, and memory stays in proportion to the limit.
  virtual absl::StatusOr<Encoding> Encode(
      absl::string_view text, const EncodeOptions& options = {}) const = 0;

  // How many special tokens Encode adds around every text with
  // add_special_tokens (2 for BERT's [CLS] ... [SEP]; 0 without a
  // post-processor).
  virtual size_t num_added_special_tokens() const = 0;
  // Frames `encoding`, made with add_special_tokens = false (or a slice of
  // one), exactly as Encode would have: the post-processor's special tokens,
  // each with the empty span {0, 0} and special_tokens_mask 1. The service
  // frames each window of a long text this way, tokenising the text once.
  virtual void AddSpecialTokens(Encoding* encoding) const = 0;

  // "wordpiece" or "sentencepiece".
  virtual absl::string_view kind() const = 0;
  virtual size_t vocab_size() const = 0;
  // The token of `id`, empty when there is none; lives as long as this.
  virtual absl::string_view IdToToken(int32_t id) const = 0;
  virtual std::optional<int32_t> TokenToId(absl::string_view token) const = 0;
  // The special tokens: added tokens marked special and those the
  // post-processor places, each once, in id order.
  virtual const std::vector<SpecialToken>& special_tokens() const = 0;
};

// The special tokens `tokenizer` frames every text with (AddSpecialTokens),
// in order: BERT's [CLS] before the text and [SEP] after it, SentencePiece's
// <s> and </s> where configured.
struct Framing {
  std::vector<SpecialToken> before;
  std::vector<SpecialToken> after;
};
Framing FramingOf(const Tokenizer& tokenizer);

// Spans are kept as 32-bit offsets inside the pipeline.
inline constexpr size_t kMaxTextBytes = (size_t{1} << 32) - 1;

// The checks every Encode starts with: non-empty, at most kMaxTextBytes,
// valid UTF-8.
absl::Status CheckText(absl::string_view text);

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_TOKENIZER_H_
