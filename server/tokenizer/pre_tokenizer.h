// Stage 2 of the pipeline: normalized text → words (byte ranges of it), which
// the model then splits into tokens independently of each other.
#ifndef FAVOR_SERVER_TOKENIZER_PRE_TOKENIZER_H_
#define FAVOR_SERVER_TOKENIZER_PRE_TOKENIZER_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"

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
  virtual void Split(absl::string_view normalized,
                     std::vector<ByteRange>* words) const = 0;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_PRE_TOKENIZER_H_
