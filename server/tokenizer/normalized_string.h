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

  // Appends code point c with the input span `source`.
  void Append(char32_t c, TokenSpan source) {
    Append(c, static_cast<uint32_t>(source.begin),
           static_cast<uint32_t>(source.end));
  }
  // Appends normalized bytes [begin, end) of `from` (whole characters) with
  // their input spans.
  void AppendSlice(const NormalizedString& from, uint32_t begin, uint32_t end);

  const std::string& text() const { return text_; }
  bool empty() const { return text_.empty(); }

  // The input span of the character whose bytes start at normalized byte
  // `pos`.
  TokenSpan SourceOfByte(uint32_t pos) const {
    if (identity_) {
      size_t end = pos + 1;
      while (end < text_.size() &&
             (static_cast<unsigned char>(text_[end]) & 0xC0) == 0x80) {
        ++end;
      }
      return {identity_offset_ + pos, identity_offset_ + end};
    }
    return {source_begin_[pos], source_end_[pos]};
  }

  // The input span of the normalized bytes [begin, end), begin < end: from
  // the start of the first byte's source to the end of the last byte's. A
  // range that cuts a character (a byte-level BPE token holds some of its
  // bytes) covers the whole character, as Hugging Face's alignments do.
  TokenSpan SourceSpan(uint32_t begin, uint32_t end) const;

 private:
  std::string text_;
  bool identity_ = false;
  uint32_t identity_offset_ = 0;
  // Per normalized byte (when not identity_): its input span.
  std::vector<uint32_t> source_begin_;
  std::vector<uint32_t> source_end_;
};

// Builds a NormalizedString from a stream of (character, change) pairs,
// aligning them as Hugging Face's NormalizedString::transform does, so that
// offsets through a normalizer equal the crate's: change 0 replaces the next
// input character and takes its span; change -n replaces it and drops the n
// characters after it; change > 0 inserts a character with the span of the
// last input character consumed.
class AlignedTransform {
 public:
  // Clears *out; `in` must outlive this and differ from *out.
  AlignedTransform(const NormalizedString& in, NormalizedString* out);

  void Emit(char32_t c, int change);
  // Drops the next `count` input characters (Hugging Face's initial_offset).
  void Skip(int count);

 private:
  void Consume();

  const NormalizedString& in_;
  NormalizedString* out_;
  size_t pos_ = 0;  // next input byte
  TokenSpan last_;  // span of the last input character consumed
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_NORMALIZED_STRING_H_
