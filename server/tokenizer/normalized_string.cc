#include "server/tokenizer/normalized_string.h"

#include "server/tokenizer/unicode.h"

namespace favor::tokenizer {

void NormalizedString::Clear() {
  text_.clear();
  identity_ = false;
  source_begin_.clear();
  source_end_.clear();
}

void NormalizedString::AssignIdentity(absl::string_view text,
                                      uint32_t source_offset) {
  Clear();
  text_.assign(text.data(), text.size());
  identity_ = true;
  identity_offset_ = source_offset;
}

void NormalizedString::Append(char32_t c, uint32_t source_begin,
                              uint32_t source_end) {
  char bytes[4];
  const int length =
      c < 0x80 ? (bytes[0] = static_cast<char>(c), 1) : EncodeUtf8(c, bytes);
  text_.append(bytes, length);
  source_begin_.insert(source_begin_.end(), length, source_begin);
  source_end_.insert(source_end_.end(), length, source_end);
}

TokenSpan NormalizedString::SourceSpan(uint32_t begin, uint32_t end) const {
  if (identity_) return {identity_offset_ + begin, identity_offset_ + end};
  return {source_begin_[begin], source_end_[end - 1]};
}

}  // namespace favor::tokenizer
