// Stage 2 of the pipeline: normalized text → words (byte ranges of it), which
// the model then splits into tokens independently of each other.
#ifndef FAVOR_SERVER_TOKENIZER_PRE_TOKENIZER_H_
#define FAVOR_SERVER_TOKENIZER_PRE_TOKENIZER_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/tokenizer/normalized_string.h"

namespace favor::tokenizer {

// A half-open byte range of the normalized text.
struct ByteRange {
  uint32_t begin = 0;
  uint32_t end = 0;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Appends the words of `normalized` (valid UTF-8) to *words, in order,
  // each non-empty. Const and stateless: safe from many threads at once.
  virtual absl::Status Split(absl::string_view normalized,
                             std::vector<ByteRange>* words) const = 0;
  // Pre-tokenizers that change the text before they split it (Metaspace
  // puts its replacement character for spaces, ByteLevel a space before
  // the text) write the changed text to *out, with each character's input
  // span as Hugging Face aligns it, and return true; the others return
  // false and leave *out alone. `at_text_start`: `in` starts at the input's
  // first byte (Metaspace's prepend_scheme "first").
  virtual bool Rewrite(const NormalizedString& in, bool at_text_start,
                       NormalizedString* out) const {
    (void)in;
    (void)at_text_start;
    (void)out;
    return false;
  }
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_PRE_TOKENIZER_H_
