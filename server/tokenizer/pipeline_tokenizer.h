// The Tokenizer made of Hugging Face's four stages: added tokens are split
// out of the input first, then each remaining segment is normalized,
// pre-tokenized into words and split by the model; truncation drops tokens
// and the post-processor adds the special tokens. A new model family is a
// new stage, not a new tokenizer.
#ifndef FAVOR_SERVER_TOKENIZER_PIPELINE_TOKENIZER_H_
#define FAVOR_SERVER_TOKENIZER_PIPELINE_TOKENIZER_H_

#include <memory>
#include <string>
#include <vector>

#include "server/tokenizer/added_vocabulary.h"
#include "server/tokenizer/model.h"
#include "server/tokenizer/normalizer.h"
#include "server/tokenizer/post_processor.h"
#include "server/tokenizer/pre_tokenizer.h"
#include "server/tokenizer/tokenizer.h"

namespace favor::tokenizer {

class PipelineTokenizer final : public Tokenizer {
 public:
  struct Stages {
    std::string kind;       // what kind() reports
    AddedVocabulary added;  // may be empty
    // Added tokens with "normalized": true, matched in the normalized text
    // of each segment (their contents normalized); may be empty.
    AddedVocabulary normalized_added;
    std::unique_ptr<Normalizer> normalizer;         // null: text as is
    std::unique_ptr<PreTokenizer> pre_tokenizer;    // null: a segment is a word
    std::unique_ptr<Model> model;                   // required
    std::unique_ptr<PostProcessor> post_processor;  // null: none
    // Special tokens to report besides the added ones marked special: those
    // the post-processor places, the model's unknown token, ...
    std::vector<SpecialToken> extra_special_tokens;
  };

  explicit PipelineTokenizer(Stages stages);

  absl::StatusOr<Encoding> Encode(absl::string_view text,
                                  const EncodeOptions& options) const override;
  size_t num_added_special_tokens() const override;
  void AddSpecialTokens(Encoding* encoding) const override;
  absl::string_view kind() const override { return stages_.kind; }
  size_t vocab_size() const override;
  absl::string_view IdToToken(int32_t id) const override;
  std::optional<int32_t> TokenToId(absl::string_view token) const override;
  const std::vector<SpecialToken>& special_tokens() const override {
    return special_tokens_;
  }

 private:
  struct Scratch;
  absl::Status EncodeSegment(absl::string_view text, ByteRange segment,
                             Scratch* scratch,
                             TruncatingAppender* appender) const;
  // Pre-tokenizes and tokenizes normalized text that holds no added token.
  absl::Status EncodeNormalized(const NormalizedString& normalized,
                                bool at_text_start, Scratch* scratch,
                                TruncatingAppender* appender) const;
  // Appends a token of the text, its span trimmed by the post-processor.
  void AppendTextToken(int32_t id, TokenSpan span, Scratch* scratch,
                       TruncatingAppender* appender) const;

  Stages stages_;
  std::vector<SpecialToken> special_tokens_;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_PIPELINE_TOKENIZER_H_
