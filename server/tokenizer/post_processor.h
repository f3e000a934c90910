// Stage 4 of the pipeline: places the special tokens around the tokens of
// the text ([CLS] ... [SEP] for BERT, <s> ... </s> for others).
#ifndef FAVOR_SERVER_TOKENIZER_POST_PROCESSOR_H_
#define FAVOR_SERVER_TOKENIZER_POST_PROCESSOR_H_

#include <cstddef>

#include "absl/strings/string_view.h"

#include "server/tokenizer/encoding.h"

namespace favor::tokenizer {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // How many tokens Process adds (truncation keeps room for them).
  virtual size_t added_tokens() const = 0;
  // Adds the special tokens to *encoding, each with the empty span {0, 0}
  // and special_tokens_mask 1. Const: safe from many threads at once.
  virtual void Process(Encoding* encoding) const = 0;
  // Adjusts the span of the `index`-th token of the text (0 for the first),
  // whose vocabulary entry is `token`, as Hugging Face's trim_offsets does
  // (ByteLevel, RobertaProcessing); whether or not special tokens are added.
  // The default leaves it.
  virtual void TrimSpan(size_t index, absl::string_view token,
                        TokenSpan* span) const {
    (void)index;
    (void)token;
    (void)span;
  }
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_POST_PROCESSOR_H_
