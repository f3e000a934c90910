#include "server/tokenizer/byte_level_pre_tokenizer.h"

#include "server/tokenizer/unicode.h"

namespace favor::tokenizer {
namespace {

char32_t CharAt(absl::string_view text, size_t pos, size_t* next) {
  *next = pos;
  return NextChar(text, next);
}

// The end of the longest run from `pos` of characters `in_class` accepts
// (pos itself when there is none).
template <typename Class>
size_t RunEnd(absl::string_view text, size_t pos, Class in_class) {
  while (pos < text.size()) {
    size_t next;
    if (!in_class(CharAt(text, pos, &next))) break;
    pos = next;
  }
  return pos;
}

bool IsOther(char32_t c) {
  return !IsWhitespace(c) && !IsLetter(c) && !IsNumber(c);
}

// 's|'t|'re|'ve|'m|'ll|'d at pos, or pos.
size_t ContractionEnd(absl::string_view text, size_t pos) {
  if (text[pos] != '\'' || pos + 1 >= text.size()) return pos;
  const char a = text[pos + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return pos + 2;
  const char b = pos + 2 < text.size() ? text[pos + 2] : '\0';
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') ||
      (a == 'l' && b == 'l')) {
    return pos + 3;
  }
  return pos;
}

}  // namespace

size_t Gpt2PatternMatchEnd(absl::string_view text, size_t pos) {
  if (const size_t end = ContractionEnd(text, pos); end > pos) return end;
  // " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+", in that order.
  const size_t after_space = text[pos] == ' ' ? pos + 1 : pos;
  for (bool (*in_class)(char32_t) : {&IsLetter, &IsNumber, &IsOther}) {
    const size_t end = RunEnd(text, after_space, in_class);
    if (end > after_space) return end;
  }
  // "\s+(?!\S)|\s+": a run of whitespace, less its last character when a
  // non-space follows the run and the run has more than one.
  const size_t end = RunEnd(text, pos, IsWhitespace);
  if (end == text.size()) return end;
  size_t last = end;
  while (IsContinuationByte(text[last - 1])) --last;
  --last;
  return last > pos ? last : end;
}

absl::Status ByteLevelPreTokenizer::Split(absl::string_view normalized,
                                          std::vector<ByteRange>* words) const {
  if (normalized.empty()) return absl::OkStatus();
  if (!options_.use_regex) {
    words->push_back({0, static_cast<uint32_t>(normalized.size())});
    return absl::OkStatus();
  }
  size_t pos = 0;
  while (pos < normalized.size()) {
    const size_t end = Gpt2PatternMatchEnd(normalized, pos);
    words->push_back({static_cast<uint32_t>(pos), static_cast<uint32_t>(end)});
    pos = end;
  }
  return absl::OkStatus();
}

bool ByteLevelPreTokenizer::Rewrite(const NormalizedString& in,
                                    bool /*at_text_start*/,
                                    NormalizedString* out) const {
  if (!options_.add_prefix_space || in.empty() || in.text()[0] == ' ') {
    return false;
  }
  // The crate's prepend: the space and the first character both take the
  // first character's span.
  out->Clear();
  const TokenSpan first = in.SourceOfByte(0);
  out->Append(' ', first);
  out->AppendSlice(in, 0, static_cast<uint32_t>(in.text().size()));
  return true;
}

}  // namespace favor::tokenizer
