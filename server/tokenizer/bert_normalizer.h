// Hugging Face's BertNormalizer: in this order, clean_text (drop NUL, U+FFFD
// and control characters; every whitespace character becomes a space),
// handle_chinese_chars (a space either side of each CJK ideograph),
// strip_accents (NFD, then drop nonspacing marks) and lowercase (full
// per-character mapping). Every output character keeps the span of the input
// character it came from, so the spaces around an ideograph and the letters
// of a decomposed character all point at that character.
#ifndef FAVOR_SERVER_TOKENIZER_BERT_NORMALIZER_H_
#define FAVOR_SERVER_TOKENIZER_BERT_NORMALIZER_H_

#include <optional>

#include "server/tokenizer/normalizer.h"

namespace favor::tokenizer {

class BertNormalizer final : public Normalizer {
 public:
  // The fields of tokenizer.json's "BertNormalizer", with its defaults.
  struct Options {
    bool clean_text = true;
    bool handle_chinese_chars = true;
    // std::nullopt (JSON null): strip accents exactly when lowercasing, as
    // Hugging Face and BERT's uncased checkpoints do.
    std::optional<bool> strip_accents;
    bool lowercase = true;
  };

  explicit BertNormalizer(const Options& options);

  absl::Status Normalize(absl::string_view text, uint32_t source_offset,
                         NormalizedString* out) const override;

 private:
  const Options options_;
  const bool strip_accents_;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_BERT_NORMALIZER_H_
