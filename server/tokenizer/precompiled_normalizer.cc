#include "server/tokenizer/precompiled_normalizer.h"

#include <utf8proc.h>

#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "server/tokenizer/unicode.h"

namespace favor::tokenizer {
namespace {

// darts-clone's unit layout, as spm_precompiled reads it.
bool HasLeaf(uint64_t unit) { return ((unit >> 8) & 1) == 1; }
uint64_t Value(uint64_t unit) { return unit & ((uint64_t{1} << 31) - 1); }
uint64_t Label(uint64_t unit) { return unit & ((uint64_t{1} << 31) | 0xFF); }
uint64_t Offset(uint64_t unit) {
  return (unit >> 10) << ((unit & (uint64_t{1} << 9)) >> 6);
}

struct Tagged {
  char32_t c;
  int change;
};

// The crate's replace(): the new characters replace the old ones one for
// one; extra ones are inserted (the last `diff` entries), and a shortfall
// is charged to the last entry, whichever grapheme it belongs to.
void Replace(absl::string_view old_part, absl::string_view new_part,
             std::vector<Tagged>* out) {
  int old_count = 0;
  for (size_t pos = 0; pos < old_part.size(); ++old_count) {
    NextChar(old_part, &pos);
  }
  int new_count = 0;
  for (size_t pos = 0; pos < new_part.size(); ++new_count) {
    out->push_back({NextChar(new_part, &pos), 0});
  }
  const int diff = new_count - old_count;
  if (diff > 0) {
    for (int i = 0; i < diff; ++i) (*out)[out->size() - 1 - i].change = 1;
  } else if (diff < 0 && !out->empty()) {
    out->back().change += diff;
  }
}

// The end of the extended grapheme cluster starting at `pos`.
size_t GraphemeEnd(absl::string_view text, size_t pos) {
  utf8proc_int32_t state = 0;
  char32_t previous = NextChar(text, &pos);
  while (pos < text.size()) {
    size_t next = pos;
    const char32_t c = NextChar(text, &next);
    if (utf8proc_grapheme_break_stateful(
            static_cast<utf8proc_int32_t>(previous),
            static_cast<utf8proc_int32_t>(c), &state)) {
      break;
    }
    previous = c;
    pos = next;
  }
  return pos;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PrecompiledNormalizer>>
PrecompiledNormalizer::FromBase64(absl::string_view base64) {
  std::string charsmap;
  if (!absl::Base64Unescape(base64, &charsmap)) {
    return absl::InvalidArgumentError("\"precompiled_charsmap\" is not base64");
  }
  return FromCharsmap(charsmap);
}

absl::StatusOr<std::unique_ptr<PrecompiledNormalizer>>
PrecompiledNormalizer::FromCharsmap(absl::string_view charsmap) {
  const auto read_u32 = [&](size_t at) {
    uint32_t value = 0;
    for (int i = 3; i >= 0; --i) {
      value = (value << 8) | static_cast<unsigned char>(charsmap[at + i]);
    }
    return value;
  };
  if (charsmap.size() < 4) {
    return absl::InvalidArgumentError("the precompiled charsmap is truncated");
  }
  const uint32_t trie_bytes = read_u32(0);
  if (trie_bytes % 4 != 0 || trie_bytes == 0 ||
      trie_bytes > charsmap.size() - 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("the precompiled charsmap's trie size ", trie_bytes,
                     " does not fit its ", charsmap.size(), " bytes"));
  }
  std::vector<uint32_t> trie(trie_bytes / 4);
  for (size_t i = 0; i < trie.size(); ++i) trie[i] = read_u32(4 + 4 * i);
  std::string replacements(charsmap.substr(4 + trie_bytes));
  if (const absl::Status valid =
          ValidateUtf8(replacements, "the precompiled charsmap's replacements");
      !valid.ok()) {
    return valid;
  }
  return absl::WrapUnique(
      new PrecompiledNormalizer(std::move(trie), std::move(replacements)));
}

std::optional<absl::string_view> PrecompiledNormalizer::Lookup(
    absl::string_view chunk) const {
  uint64_t node = Offset(trie_[0]);
  for (const char byte : chunk) {
    const auto c = static_cast<unsigned char>(byte);
    if (c == 0) break;
    node ^= c;
    if (node >= trie_.size()) return std::nullopt;
    const uint64_t unit = trie_[node];
    if (Label(unit) != c) return std::nullopt;
    node ^= Offset(unit);
    if (node >= trie_.size()) return std::nullopt;
    if (!HasLeaf(unit)) continue;
    const uint64_t begin = Value(trie_[node]);
    if (begin > replacements_.size()) return std::nullopt;
    size_t end = replacements_.find('\0', begin);
    if (end == std::string::npos) end = replacements_.size();
    const absl::string_view found(replacements_.data() + begin, end - begin);
    // An offset inside a character would not be text.
    if (!found.empty() && IsContinuationByte(found[0])) return std::nullopt;
    return found;
  }
  return std::nullopt;
}

absl::Status PrecompiledNormalizer::Transform(const NormalizedString& in,
                                              NormalizedString* out) const {
  const absl::string_view text = in.text();
  std::vector<Tagged> changes;
  changes.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = GraphemeEnd(text, pos);
    const absl::string_view grapheme = text.substr(pos, end - pos);
    pos = end;
    if (grapheme.size() < 6) {
      if (const auto replacement = Lookup(grapheme)) {
        Replace(grapheme, *replacement, &changes);
        continue;
      }
    }
    size_t at = 0;
    while (at < grapheme.size()) {
      const size_t start = at;
      const char32_t c = NextChar(grapheme, &at);
      const absl::string_view part = grapheme.substr(start, at - start);
      if (const auto replacement = Lookup(part)) {
        Replace(part, *replacement, &changes);
      } else {
        changes.push_back({c, 0});
      }
    }
  }
  AlignedTransform transform(in, out);
  for (const Tagged& t : changes) transform.Emit(t.c, t.change);
  return absl::OkStatus();
}

}  // namespace favor::tokenizer
