// Hugging Face's BertPreTokenizer: split on whitespace (dropped), then on
// punctuation (each punctuation character a word of its own). Whitespace and
// punctuation are the classes of unicode.h (White_Space; ASCII punctuation
// or a P* category).
#ifndef FAVOR_SERVER_TOKENIZER_BERT_PRE_TOKENIZER_H_
#define FAVOR_SERVER_TOKENIZER_BERT_PRE_TOKENIZER_H_

#include "server/tokenizer/pre_tokenizer.h"

namespace favor::tokenizer {

class BertPreTokenizer final : public PreTokenizer {
 public:
  absl::Status Split(absl::string_view normalized,
                     std::vector<ByteRange>* words) const override;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_BERT_PRE_TOKENIZER_H_
