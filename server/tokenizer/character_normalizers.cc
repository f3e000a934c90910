#include "server/tokenizer/character_normalizers.h"

#include <vector>

#include "server/tokenizer/unicode.h"

namespace favor::tokenizer {
namespace {

std::vector<char32_t> Chars(absl::string_view text) {
  std::vector<char32_t> chars;
  chars.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) chars.push_back(NextChar(text, &pos));
  return chars;
}

}  // namespace

absl::Status LowercaseNormalizer::Transform(const NormalizedString& in,
                                            NormalizedString* out) const {
  AlignedTransform transform(in, out);
  const absl::string_view text = in.text();
  size_t pos = 0;
  char32_t lower[2];
  while (pos < text.size()) {
    const int count = Lowercase(NextChar(text, &pos), lower);
    for (int i = 0; i < count; ++i) transform.Emit(lower[i], i > 0 ? 1 : 0);
  }
  return absl::OkStatus();
}

absl::Status StripNormalizer::Transform(const NormalizedString& in,
                                        NormalizedString* out) const {
  const std::vector<char32_t> chars = Chars(in.text());
  size_t begin = 0;
  size_t end = chars.size();
  if (left_) {
    while (begin < end && IsWhitespace(chars[begin])) ++begin;
  }
  if (right_) {
    while (end > begin && IsWhitespace(chars[end - 1])) --end;
  }
  AlignedTransform transform(in, out);
  transform.Skip(static_cast<int>(begin));
  for (size_t i = begin; i < end; ++i) transform.Emit(chars[i], 0);
  return absl::OkStatus();
}

absl::Status ReplaceNormalizer::Transform(const NormalizedString& in,
                                          NormalizedString* out) const {
  const absl::string_view text = in.text();
  std::vector<ByteRange> matches;
  if (!text.empty()) {
    const absl::Status found = pattern_->FindAll(text, &matches);
    if (!found.ok()) return found;
  }
  AlignedTransform transform(in, out);
  const std::vector<char32_t> content = Chars(content_);
  size_t pos = 0;
  for (const ByteRange& match : matches) {
    while (pos < match.begin) transform.Emit(NextChar(text, &pos), 0);
    int removed = 0;
    while (pos < match.end) {
      NextChar(text, &pos);
      ++removed;
    }
    transform.Skip(removed);
    for (const char32_t c : content) transform.Emit(c, 1);
  }
  while (pos < text.size()) transform.Emit(NextChar(text, &pos), 0);
  return absl::OkStatus();
}

absl::Status PrependNormalizer::Transform(const NormalizedString& in,
                                          NormalizedString* out) const {
  AlignedTransform transform(in, out);
  if (in.empty()) return absl::OkStatus();
  const std::vector<char32_t> prefix = Chars(prefix_);
  const std::vector<char32_t> chars = Chars(in.text());
  if (prefix.empty()) {
    for (const char32_t c : chars) transform.Emit(c, 0);
    return absl::OkStatus();
  }
  for (size_t i = 0; i < prefix.size(); ++i) {
    transform.Emit(prefix[i], i == 0 ? 0 : 1);
  }
  transform.Emit(chars[0], 1);
  for (size_t i = 1; i < chars.size(); ++i) transform.Emit(chars[i], 0);
  return absl::OkStatus();
}

}  // namespace favor::tokenizer
