#include "server/tokenizer/bert_pre_tokenizer.h"

#include "server/tokenizer/unicode.h"

namespace favor::tokenizer {

absl::Status BertPreTokenizer::Split(absl::string_view normalized,
                                     std::vector<ByteRange>* words) const {
  // One pass: `word_begin` is where the word being read started, or npos.
  constexpr size_t kNone = absl::string_view::npos;
  size_t word_begin = kNone;
  size_t pos = 0;
  auto close_word = [&](size_t end) {
    if (word_begin != kNone) {
      words->push_back(
          {static_cast<uint32_t>(word_begin), static_cast<uint32_t>(end)});
      word_begin = kNone;
    }
  };
  while (pos < normalized.size()) {
    const size_t begin = pos;
    const char32_t c = NextChar(normalized, &pos);
    if (IsWhitespace(c)) {
      close_word(begin);
    } else if (IsBertPunctuation(c)) {
      close_word(begin);
      words->push_back(
          {static_cast<uint32_t>(begin), static_cast<uint32_t>(pos)});
    } else if (word_begin == kNone) {
      word_begin = begin;
    }
  }
  close_word(pos);
  return absl::OkStatus();
}

}  // namespace favor::tokenizer
