// Hugging Face's NFC, NFD, NFKC and NFKD normalizers, with the Unicode data
// of utf8proc and the alignment of the crate's normalisation iterator
// (unicode-normalization-alignments): each output character is tagged with
// how many input characters it replaces, and a composed character ("e" +
// U+0301 → "é") takes the span of its first input character only, as the
// crate's offsets do.
//
// Cost: linear in the text; each run of combining marks is put in canonical
// order with a stable sort.
#ifndef FAVOR_SERVER_TOKENIZER_UNICODE_NORMALIZER_H_
#define FAVOR_SERVER_TOKENIZER_UNICODE_NORMALIZER_H_

#include "server/tokenizer/normalizer.h"

namespace favor::tokenizer {

class UnicodeNormalizer final : public ChainableNormalizer {
 public:
  enum class Form { kNfc, kNfd, kNfkc, kNfkd };

  explicit UnicodeNormalizer(Form form) : form_(form) {}

  absl::Status Transform(const NormalizedString& in,
                         NormalizedString* out) const override;

 private:
  const Form form_;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_UNICODE_NORMALIZER_H_
