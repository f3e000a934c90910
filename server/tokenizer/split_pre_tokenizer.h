// Hugging Face's Split pre-tokenizer (pre_tokenizers/split.rs): the text is
// cut at each match of a pattern (a String matched as it is, or a Regex),
// and the matches are dropped, kept as words of their own or merged into a
// neighbour. Llama 3 and tiktoken-style files split this way before
// ByteLevel.
#ifndef FAVOR_SERVER_TOKENIZER_SPLIT_PRE_TOKENIZER_H_
#define FAVOR_SERVER_TOKENIZER_SPLIT_PRE_TOKENIZER_H_

#include <memory>
#include <utility>
#include <vector>

#include "server/tokenizer/pre_tokenizer.h"
#include "server/tokenizer/regex.h"

namespace favor::tokenizer {

// What becomes of the matches (the crate's SplitDelimiterBehavior). With
// "-" on "the-final--countdown":
enum class SplitBehavior {
  kRemoved,             // the final countdown
  kIsolated,            // the - final - - countdown
  kMergedWithPrevious,  // the- final- - countdown
  kMergedWithNext,      // the -final - -countdown
  kContiguous,          // the - final -- countdown
};

class SplitPreTokenizer final : public PreTokenizer {
 public:
  // `invert`: the pattern matches the words, and what lies between them is
  // what `behavior` applies to.
  SplitPreTokenizer(std::unique_ptr<Regex> pattern, SplitBehavior behavior,
                    bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}

  // Fails only when the pattern reaches its match limit on this text.
  absl::Status Split(absl::string_view normalized,
                     std::vector<ByteRange>* words) const override;

 private:
  const std::unique_ptr<Regex> pattern_;
  const SplitBehavior behavior_;
  const bool invert_;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_SPLIT_PRE_TOKENIZER_H_
