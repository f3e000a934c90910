// A SentencePiece .model (unigram or BPE) as the model stage of a pipeline
// with no normalizer and no pre-tokenizer: SentencePiece normalizes and
// splits by itself, and reports each piece's input bytes, which are the
// spans Favor returns.
#ifndef FAVOR_SERVER_TOKENIZER_SENTENCEPIECE_MODEL_H_
#define FAVOR_SERVER_TOKENIZER_SENTENCEPIECE_MODEL_H_

#include <memory>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "server/tokenizer/model.h"
#include "server/tokenizer/sentencepiece_bridge.h"

namespace favor::tokenizer {

// 64 KiB: about 0.05 s of libsentencepiece's merging. A real text's
// unknown runs are a few characters long (an emoji, a rare letter).
inline constexpr size_t kMaxUnknownRunBytes = size_t{64} << 10;

class SentencePieceModel final : public Model {
 public:
  // INVALID_ARGUMENT naming `what` when the bytes are not a model.
  static absl::StatusOr<std::unique_ptr<SentencePieceModel>> Load(
      const std::string& serialized, absl::string_view what);

  void Tokenize(absl::string_view word,
                std::vector<ModelToken>* tokens) const override;
  // libsentencepiece merges a run of unknown pieces into one by appending
  // each to a copy of the run so far: time quadratic in the run (1 MiB of
  // one combining mark after "a" takes 26 s, 4 MiB minutes, on a tokenizer
  // thread no deadline stops). A text is refused when a run of
  // characters that no piece holds, with the combining marks that follow
  // any character, is over kMaxUnknownRunBytes.
  absl::Status CheckCost(absl::string_view text) const override;
  absl::string_view IdToToken(int32_t id) const override;
  std::optional<int32_t> TokenToId(absl::string_view token) const override;
  size_t vocab_size() const override;

  const spm_bridge::Processor& processor() const { return *processor_; }

 private:
  explicit SentencePieceModel(std::unique_ptr<spm_bridge::Processor> processor);

  std::unique_ptr<spm_bridge::Processor> processor_;
  // The characters of the pieces that are not unknown or control, and ' '
  // where U+2581 (SentencePiece's space) is one of them.
  absl::flat_hash_set<char32_t> known_chars_;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_SENTENCEPIECE_MODEL_H_
