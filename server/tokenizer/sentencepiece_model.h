// A SentencePiece .model (unigram or BPE) as the model stage of a pipeline
// with no normalizer and no pre-tokenizer: SentencePiece normalizes and
// splits by itself, and reports each piece's input bytes, which are the
// spans Favor returns.
#ifndef FAVOR_SERVER_TOKENIZER_SENTENCEPIECE_MODEL_H_
#define FAVOR_SERVER_TOKENIZER_SENTENCEPIECE_MODEL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/tokenizer/model.h"
#include "server/tokenizer/sentencepiece_bridge.h"

namespace favor::tokenizer {

class SentencePieceModel final : public Model {
 public:
  // INVALID_ARGUMENT naming `what` when the bytes are not a model.
  static absl::StatusOr<std::unique_ptr<SentencePieceModel>> Load(
      const std::string& serialized, absl::string_view what);

  void Tokenize(absl::string_view word,
                std::vector<ModelToken>* tokens) const override;
  absl::string_view IdToToken(int32_t id) const override;
  std::optional<int32_t> TokenToId(absl::string_view token) const override;
  size_t vocab_size() const override;

  const spm_bridge::Processor& processor() const { return *processor_; }

 private:
  explicit SentencePieceModel(std::unique_ptr<spm_bridge::Processor> processor)
      : processor_(std::move(processor)) {}

  std::unique_ptr<spm_bridge::Processor> processor_;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_SENTENCEPIECE_MODEL_H_
