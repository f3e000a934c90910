// Hugging Face's Metaspace pre-tokenizer (SentencePiece-style models: XLM-R,
// Llama-style BPE): every space becomes the replacement character ("▁",
// aligned to the space), one is put before the text as prepend_scheme says
// (aligned to its first character), and with `split` each replacement
// character starts a new word (the crate's MergedWithNext: "a▁▁b" gives
// "a", "▁", "▁b").
#ifndef FAVOR_SERVER_TOKENIZER_METASPACE_PRE_TOKENIZER_H_
#define FAVOR_SERVER_TOKENIZER_METASPACE_PRE_TOKENIZER_H_

#include <string>

#include "server/tokenizer/pre_tokenizer.h"

namespace favor::tokenizer {

class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  enum class PrependScheme { kAlways, kFirst, kNever };
  struct Options {
    char32_t replacement = 0x2581;  // "▁"
    PrependScheme prepend_scheme = PrependScheme::kAlways;
    bool split = true;
  };
  explicit MetaspacePreTokenizer(const Options& options);

  absl::Status Split(absl::string_view normalized,
                     std::vector<ByteRange>* words) const override;
  bool Rewrite(const NormalizedString& in, bool at_text_start,
               NormalizedString* out) const override;

 private:
  const Options options_;
  std::string replacement_utf8_;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_METASPACE_PRE_TOKENIZER_H_
