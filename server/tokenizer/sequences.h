// Hugging Face's "Sequence" of each stage: stages applied one after the
// other, as the crate's normalizers/utils.rs, pre_tokenizers/sequence.rs
// and processors/sequence.rs apply them.
#ifndef FAVOR_SERVER_TOKENIZER_SEQUENCES_H_
#define FAVOR_SERVER_TOKENIZER_SEQUENCES_H_

#include <memory>
#include <utility>
#include <vector>

#include "server/tokenizer/normalizer.h"
#include "server/tokenizer/post_processor.h"
#include "server/tokenizer/pre_tokenizer.h"

namespace favor::tokenizer {

// Each normalizer takes the previous one's output.
class NormalizerSequence final : public ChainableNormalizer {
 public:
  explicit NormalizerSequence(
      std::vector<std::unique_ptr<ChainableNormalizer>> stages)
      : stages_(std::move(stages)) {}

  absl::Status Transform(const NormalizedString& in,
                         NormalizedString* out) const override;

 private:
  std::vector<std::unique_ptr<ChainableNormalizer>> stages_;
};

// The first pre-tokenizer may rewrite the text (the loader refuses a
// rewriting one later in the list, which would rewrite each word on its
// own); each later one splits every word of the one before.
class PreTokenizerSequence final : public PreTokenizer {
 public:
  explicit PreTokenizerSequence(
      std::vector<std::unique_ptr<PreTokenizer>> stages)
      : stages_(std::move(stages)) {}

  absl::Status Split(absl::string_view normalized,
                     std::vector<ByteRange>* words) const override;
  bool Rewrite(const NormalizedString& in, bool at_text_start,
               NormalizedString* out) const override;

 private:
  std::vector<std::unique_ptr<PreTokenizer>> stages_;
};

// Processes with each in order; the tokens added are the sum.
class PostProcessorSequence final : public PostProcessor {
 public:
  explicit PostProcessorSequence(
      std::vector<std::unique_ptr<PostProcessor>> stages)
      : stages_(std::move(stages)) {}

  size_t added_tokens() const override;
  void Process(Encoding* encoding) const override;
  void TrimSpan(size_t index, absl::string_view token,
                TokenSpan* span) const override;

 private:
  std::vector<std::unique_ptr<PostProcessor>> stages_;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_SEQUENCES_H_
