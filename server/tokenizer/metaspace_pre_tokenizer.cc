#include "server/tokenizer/metaspace_pre_tokenizer.h"

#include "absl/strings/match.h"
#include "server/tokenizer/unicode.h"

namespace favor::tokenizer {

MetaspacePreTokenizer::MetaspacePreTokenizer(const Options& options)
    : options_(options) {
  char utf8[4];
  replacement_utf8_.assign(utf8, EncodeUtf8(options_.replacement, utf8));
}

bool MetaspacePreTokenizer::Rewrite(const NormalizedString& in,
                                    bool at_text_start,
                                    NormalizedString* out) const {
  out->Clear();
  if (in.empty()) return true;
  const absl::string_view text = in.text();
  // Whether the text starts with the replacement once spaces are replaced.
  const bool starts_with_replacement =
      text[0] == ' ' || absl::StartsWith(text, replacement_utf8_);
  const bool prepend =
      !starts_with_replacement &&
      (options_.prepend_scheme == PrependScheme::kAlways ||
       (options_.prepend_scheme == PrependScheme::kFirst && at_text_start));
  if (prepend) out->Append(options_.replacement, in.SourceOfByte(0));
  size_t pos = 0;
  while (pos < text.size()) {
    const auto begin = static_cast<uint32_t>(pos);
    const char32_t c = NextChar(text, &pos);
    out->Append(c == ' ' ? options_.replacement : c, in.SourceOfByte(begin));
  }
  return true;
}

absl::Status MetaspacePreTokenizer::Split(absl::string_view normalized,
                                          std::vector<ByteRange>* words) const {
  if (normalized.empty()) return absl::OkStatus();
  if (!options_.split) {
    words->push_back({0, static_cast<uint32_t>(normalized.size())});
    return absl::OkStatus();
  }
  // Each replacement character starts a word; the text before the first
  // one is a word of its own.
  const absl::string_view mark = replacement_utf8_;
  size_t begin = 0;
  size_t pos = 0;
  while (pos < normalized.size()) {
    if (normalized.substr(pos, mark.size()) == mark) {
      if (pos > begin) {
        words->push_back(
            {static_cast<uint32_t>(begin), static_cast<uint32_t>(pos)});
      }
      begin = pos;
      pos += mark.size();
      continue;
    }
    NextChar(normalized, &pos);
  }
  words->push_back(
      {static_cast<uint32_t>(begin), static_cast<uint32_t>(normalized.size())});
  return absl::OkStatus();
}

}  // namespace favor::tokenizer
