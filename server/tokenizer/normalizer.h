// Stage 1 of the pipeline: text → normalized text with its alignment.
#ifndef FAVOR_SERVER_TOKENIZER_NORMALIZER_H_
#define FAVOR_SERVER_TOKENIZER_NORMALIZER_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/tokenizer/normalized_string.h"

namespace favor::tokenizer {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Normalizes `text` (valid UTF-8, one segment of the input starting at
  // input byte `source_offset`) into *out, which it clears first. Const and
  // stateless: one normalizer serves many threads at once.
  virtual absl::Status Normalize(absl::string_view text, uint32_t source_offset,
                                 NormalizedString* out) const = 0;
};

// A normalizer that can also take the output of another one, so that
// Hugging Face's "Sequence" can chain them: each output character carries
// the input span Hugging Face's NormalizedString would give it.
class ChainableNormalizer : public Normalizer {
 public:
  // Normalizes `in` into *out (cleared first; never `in` itself).
  virtual absl::Status Transform(const NormalizedString& in,
                                 NormalizedString* out) const = 0;

  absl::Status Normalize(absl::string_view text, uint32_t source_offset,
                         NormalizedString* out) const override {
    NormalizedString in;
    in.AssignIdentity(text, source_offset);
    return Transform(in, out);
  }
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_NORMALIZER_H_
