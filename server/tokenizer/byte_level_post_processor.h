// Hugging Face's ByteLevel post-processor and RobertaProcessing, whose
// trim_offsets narrows a token's span past the spaces it starts or ends
// with ("Ġworld" covers "world", not " world"), counting "Ġ" and
// whitespace characters of the vocabulary entry as one byte each, as the
// crate's process_offsets does. With add_prefix_space, the first token
// keeps a single leading space (the pre-tokenizer put it there).
#ifndef FAVOR_SERVER_TOKENIZER_BYTE_LEVEL_POST_PROCESSOR_H_
#define FAVOR_SERVER_TOKENIZER_BYTE_LEVEL_POST_PROCESSOR_H_

#include <memory>

#include "absl/status/statusor.h"
#include "server/tokenizer/post_processor.h"
#include "server/tokenizer/template_processing.h"

namespace favor::tokenizer {

// The crate's process_offsets for one token.
void TrimByteLevelSpan(size_t index, absl::string_view token,
                       bool add_prefix_space, TokenSpan* span);

// Adds no token; only trims spans when trim_offsets is set.
class ByteLevelPostProcessor final : public PostProcessor {
 public:
  ByteLevelPostProcessor(bool trim_offsets, bool add_prefix_space)
      : trim_offsets_(trim_offsets), add_prefix_space_(add_prefix_space) {}

  size_t added_tokens() const override { return 0; }
  void Process(Encoding* /*encoding*/) const override {}
  void TrimSpan(size_t index, absl::string_view token,
                TokenSpan* span) const override;

 private:
  const bool trim_offsets_;
  const bool add_prefix_space_;
};

// RobertaProcessing: <s> $A </s> (its cls and sep), and ByteLevel's
// trimming when trim_offsets is set.
class RobertaProcessing final : public PostProcessor {
 public:
  struct Options {
    TemplateProcessing::Item cls;
    TemplateProcessing::Item sep;
    bool trim_offsets = true;
    bool add_prefix_space = true;
  };
  static absl::StatusOr<std::unique_ptr<RobertaProcessing>> Create(
      const Options& options);

  size_t added_tokens() const override { return frame_->added_tokens(); }
  void Process(Encoding* encoding) const override { frame_->Process(encoding); }
  void TrimSpan(size_t index, absl::string_view token,
                TokenSpan* span) const override;

 private:
  RobertaProcessing(std::unique_ptr<TemplateProcessing> frame,
                    const Options& options)
      : frame_(std::move(frame)), trim_(options.trim_offsets,
                                        options.add_prefix_space) {}

  std::unique_ptr<TemplateProcessing> frame_;
  ByteLevelPostProcessor trim_;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_BYTE_LEVEL_POST_PROCESSOR_H_
