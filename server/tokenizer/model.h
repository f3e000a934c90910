// Stage 3 of the pipeline: one word of normalized text → tokens, each with
// its byte range inside the word. A model also owns the vocabulary.
#ifndef FAVOR_SERVER_TOKENIZER_MODEL_H_
#define FAVOR_SERVER_TOKENIZER_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace favor::tokenizer {

struct ModelToken {
  int32_t id = 0;
  // Bytes [begin, end) of the word this token covers.
  uint32_t begin = 0;
  uint32_t end = 0;
};

class Model {
 public:
  virtual ~Model() = default;
  // Appends the tokens of `word` (non-empty, valid UTF-8) to *tokens. Const
  // and stateless: safe from many threads at once.
  virtual void Tokenize(absl::string_view word,
                        std::vector<ModelToken>* tokens) const = 0;
  // INVALID_ARGUMENT when `text` (a whole text, before normalisation) would
  // cost this model far more than its length; Encode refuses such a text
  // before it starts. Most models are linear in every text.
  virtual absl::Status CheckCost(absl::string_view text) const {
    (void)text;
    return absl::OkStatus();
  }
  // The piece of `id`, empty when the vocabulary has no such id. The view
  // lives as long as the model.
  virtual absl::string_view IdToToken(int32_t id) const = 0;
  virtual std::optional<int32_t> TokenToId(absl::string_view token) const = 0;
  virtual size_t vocab_size() const = 0;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_MODEL_H_
