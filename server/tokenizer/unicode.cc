#include "server/tokenizer/unicode.h"

#include <utf8proc.h>

#include "absl/strings/str_cat.h"

namespace favor::tokenizer {
namespace {

utf8proc_category_t CategoryOf(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

}  // namespace

absl::Status ValidateUtf8(absl::string_view text, absl::string_view what) {
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  const auto size = static_cast<utf8proc_ssize_t>(text.size());
  utf8proc_ssize_t pos = 0;
  while (pos < size) {
    if (bytes[pos] < 0x80) {
      ++pos;
      continue;
    }
    utf8proc_int32_t c;
    const utf8proc_ssize_t length =
        utf8proc_iterate(bytes + pos, size - pos, &c);
    if (length <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " is not valid UTF-8: invalid byte 0x",
          absl::Hex(bytes[pos], absl::kZeroPad2), " at byte offset ", pos));
    }
    pos += length;
  }
  return absl::OkStatus();
}

int EncodeUtf8(char32_t c, char* out) {
  return static_cast<int>(
      utf8proc_encode_char(static_cast<utf8proc_int32_t>(c),
                           reinterpret_cast<utf8proc_uint8_t*>(out)));
}

bool IsWhitespace(char32_t c) {
  if ((c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85) return true;
  if (c < 0x80) return false;
  const utf8proc_category_t category = CategoryOf(c);
  return category == UTF8PROC_CATEGORY_ZS || category == UTF8PROC_CATEGORY_ZL ||
         category == UTF8PROC_CATEGORY_ZP;
}

bool IsBertControl(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  const utf8proc_category_t category = CategoryOf(c);
  return category == UTF8PROC_CATEGORY_CC || category == UTF8PROC_CATEGORY_CF ||
         category == UTF8PROC_CATEGORY_CO;
}

bool IsBertPunctuation(char32_t c) {
  if (c < 0x80) {
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) ||
           (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
  }
  const utf8proc_category_t category = CategoryOf(c);
  return category >= UTF8PROC_CATEGORY_PC && category <= UTF8PROC_CATEGORY_PO;
}

bool IsCjkIdeograph(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool IsLetter(char32_t c) {
  if (c < 0x80) return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
  const utf8proc_category_t category = CategoryOf(c);
  return category >= UTF8PROC_CATEGORY_LU && category <= UTF8PROC_CATEGORY_LO;
}

bool IsNumber(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  const utf8proc_category_t category = CategoryOf(c);
  return category >= UTF8PROC_CATEGORY_ND && category <= UTF8PROC_CATEGORY_NO;
}

bool IsNonspacingMark(char32_t c) {
  return c >= 0x80 && CategoryOf(c) == UTF8PROC_CATEGORY_MN;
}

int CombiningClass(char32_t c) {
  if (c < 0x80) return 0;
  return utf8proc_get_property(static_cast<utf8proc_int32_t>(c))
      ->combining_class;
}

int DecomposeCanonical(char32_t c, char32_t* out) {
  if (c < 0x80) {
    out[0] = c;
    return 1;
  }
  utf8proc_int32_t parts[kMaxDecomposition];
  int last_boundclass = 0;
  const utf8proc_ssize_t count = utf8proc_decompose_char(
      static_cast<utf8proc_int32_t>(c), parts, kMaxDecomposition,
      UTF8PROC_DECOMPOSE, &last_boundclass);
  if (count <= 0 || count > kMaxDecomposition) {
    out[0] = c;  // cannot happen for canonical decompositions (at most 4)
    return 1;
  }
  for (utf8proc_ssize_t i = 0; i < count; ++i) out[i] = parts[i];
  return static_cast<int>(count);
}

int Lowercase(char32_t c, char32_t* out) {
  if (c < 0x80) {
    out[0] = (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
    return 1;
  }
  if (c == 0x130) {  // LATIN CAPITAL LETTER I WITH DOT ABOVE
    out[0] = 'i';
    out[1] = 0x307;  // COMBINING DOT ABOVE
    return 2;
  }
  out[0] =
      static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
  return 1;
}

}  // namespace favor::tokenizer
