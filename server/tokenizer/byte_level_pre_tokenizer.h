// Hugging Face's ByteLevel pre-tokenizer (GPT-2, RoBERTa, ModernBERT):
// with add_prefix_space, a space goes before a text that does not start
// with one (aligned to its first character); with use_regex, the text is
// split by GPT-2's pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (leftmost alternative first), matched by hand here with utf8proc's
// classes. The words stay in UTF-8: the byte-level BPE model (Bpe::Options::
// byte_level) reads their bytes in GPT-2's alphabet, which is what the
// crate's rewrite of the text into that alphabet amounts to.
//
// Cost: one pass; each character is looked at a bounded number of times.
#ifndef FAVOR_SERVER_TOKENIZER_BYTE_LEVEL_PRE_TOKENIZER_H_
#define FAVOR_SERVER_TOKENIZER_BYTE_LEVEL_PRE_TOKENIZER_H_

#include "server/tokenizer/pre_tokenizer.h"

namespace favor::tokenizer {

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  struct Options {
    bool add_prefix_space = true;
    bool use_regex = true;
  };
  explicit ByteLevelPreTokenizer(const Options& options) : options_(options) {}

  absl::Status Split(absl::string_view normalized,
                     std::vector<ByteRange>* words) const override;
  bool Rewrite(const NormalizedString& in, bool at_text_start,
               NormalizedString* out) const override;

 private:
  const Options options_;
};

// The end of GPT-2's pattern's match at `pos` (< text.size()); every
// character starts a match, so the pattern splits the whole text.
size_t Gpt2PatternMatchEnd(absl::string_view text, size_t pos);

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_BYTE_LEVEL_PRE_TOKENIZER_H_
