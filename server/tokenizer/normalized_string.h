// Text after normalisation, with the alignment from each of its bytes back
// to the input bytes it came from (Hugging Face's NormalizedString, kept per
// byte rather than per character so that a token's span is two lookups).
#ifndef FAVOR_SERVER_TOKENIZER_NORMALIZED_STRING_H_
#define FAVOR_SERVER_TOKENIZER_NORMALIZED_STRING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "server/tokenizer/encoding.h"

namespace favor::tokenizer {

class NormalizedString {
 public:
  // Forgets the text but keeps the buffers, so that one NormalizedString
  // reused over the segments of a call allocates once.
  void Clear();

  // The text unchanged: normalized byte i is input byte source_offset + i.
  void AssignIdentity(absl::string_view text, uint32_t source_offset);

  // Appends code point c, produced from the input bytes
  // [source_begin, source_end) (several code points may share one span, and
  // one code point may stand for several input characters).
  void Append(char32_t c, uint32_t source_begin, uint32_t source_end);

  const std::string& text() const { return text_; }

  // The input span of the normalized bytes [begin, end), begin < end: from
  // the start of the first byte's source to the end of the last byte's.
  TokenSpan SourceSpan(uint32_t begin, uint32_t end) const;

 private:
  std::string text_;
  bool identity_ = false;
  uint32_t identity_offset_ = 0;
  // Per normalized byte (when not identity_): its input span.
  std::vector<uint32_t> source_begin_;
  std::vector<uint32_t> source_end_;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_NORMALIZED_STRING_H_
