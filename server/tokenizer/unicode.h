// UTF-8 decoding and the character classes the tokenizer stages use. All
// Unicode data (categories, canonical decompositions, combining classes,
// case mappings) comes from utf8proc; nothing here is a hand-made table.
// The classes follow Hugging Face tokenizers (the Rust crate) where it
// defines them, and say so.
#ifndef FAVOR_SERVER_TOKENIZER_UNICODE_H_
#define FAVOR_SERVER_TOKENIZER_UNICODE_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace favor::tokenizer {

// Returns INVALID_ARGUMENT naming the byte offset of the first byte that
// does not start a well-formed UTF-8 sequence (overlong forms, surrogates
// and code points above U+10FFFF are ill-formed). `what` starts the message.
absl::Status ValidateUtf8(absl::string_view text, absl::string_view what);

// Decodes the code point at text[*pos] and advances *pos past it. The text
// must be valid UTF-8 (see ValidateUtf8) and *pos on a character boundary.
inline char32_t NextChar(absl::string_view text, size_t* pos) {
  const auto lead = static_cast<unsigned char>(text[*pos]);
  if (lead < 0x80) {
    ++*pos;
    return lead;
  }
  const int length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
  char32_t c = lead & (0x7F >> length);
  for (int i = 1; i < length; ++i) {
    c = (c << 6) | (static_cast<unsigned char>(text[*pos + i]) & 0x3F);
  }
  *pos += length;
  return c;
}

// Writes c's UTF-8 encoding to out (room for 4 bytes); returns its length.
int EncodeUtf8(char32_t c, char* out);

// Whether a UTF-8 byte continues a character rather than starting one.
inline bool IsContinuationByte(char byte) {
  return (static_cast<unsigned char>(byte) & 0xC0) == 0x80;
}

// Unicode's White_Space property (Rust's char::is_whitespace, which Hugging
// Face's BertNormalizer and BertPreTokenizer use): the general categories
// Zs, Zl, Zp plus U+0009..U+000D and U+0085.
bool IsWhitespace(char32_t c);
// Hugging Face's BERT "control": categories Cc, Cf and Co (its
// unicode_categories crate's is_other), except \t, \n and \r, which count
// as whitespace. Unassigned code points (Cn) are not control.
bool IsBertControl(char32_t c);
// Hugging Face's BERT punctuation: ASCII punctuation (!"#$%&'()*+,-./:;<=>?
// @[\]^_`{|}~, so also the ASCII symbols) or any P* category.
bool IsBertPunctuation(char32_t c);
// BERT's "Chinese character": the CJK Unified Ideographs blocks and their
// extensions, exactly the ranges of Hugging Face's normalizers/bert.rs
// (including its 0x2B920 start of one range, where BERT's Python code says
// 0x2B820): a definition of BERT's, not Unicode data.
bool IsCjkIdeograph(char32_t c);
// Regular expressions' \p{L} (categories Lu, Ll, Lt, Lm, Lo) and \p{N}
// (Nd, Nl, No), as GPT-2's pre-tokenizing pattern uses them.
bool IsLetter(char32_t c);
bool IsNumber(char32_t c);
// General category Mn (what BERT's accent stripping removes after NFD).
bool IsNonspacingMark(char32_t c);
// Canonical_Combining_Class (0 for starters).
int CombiningClass(char32_t c);
// Canonical (NFD) decomposition of one code point into out (room for
// kMaxDecomposition); returns the count (1 when c does not decompose).
inline constexpr int kMaxDecomposition = 4;
int DecomposeCanonical(char32_t c, char32_t* out);
// Full lowercase mapping of one code point, as Rust's char::to_lowercase
// (no context: a final capital sigma becomes σ, not ς); returns the count,
// 1 or 2. utf8proc has the simple mappings only; the one unconditional
// multi-character lowercase mapping in Unicode's SpecialCasing.txt,
// U+0130 → "i̇", is added by hand.
int Lowercase(char32_t c, char32_t* out);

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_UNICODE_H_
