// Hugging Face's TemplateProcessing for one sequence: a list of special
// tokens and the sequence ($A), e.g. "[CLS] $A [SEP]". BertProcessing is the
// template [CLS] $A [SEP], and SentencePiece's add_bos / add_eos are
// "<s> $A" / "$A </s>". (Pairs of sequences are not encoded: Favor embeds
// one text at a time.)
#ifndef FAVOR_SERVER_TOKENIZER_TEMPLATE_PROCESSING_H_
#define FAVOR_SERVER_TOKENIZER_TEMPLATE_PROCESSING_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/tokenizer/post_processor.h"

namespace favor::tokenizer {

class TemplateProcessing final : public PostProcessor {
 public:
  // One template item: a special token (its content and id), or, when
  // is_sequence, the tokens of the text.
  struct Item {
    bool is_sequence = false;
    std::string token;
    int32_t id = 0;
  };

  // INVALID_ARGUMENT unless the template holds the sequence exactly once.
  static absl::StatusOr<std::unique_ptr<TemplateProcessing>> Create(
      std::vector<Item> items);

  size_t added_tokens() const override { return items_.size() - 1; }
  void Process(Encoding* encoding) const override;

 private:
  explicit TemplateProcessing(std::vector<Item> items)
      : items_(std::move(items)) {}

  std::vector<Item> items_;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_TEMPLATE_PROCESSING_H_
