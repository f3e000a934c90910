// Hugging Face's Precompiled normalizer: SentencePiece's precompiled
// character map (a double-array trie of source strings and a blob of their
// replacements, as a .model's normalizer_spec carries it, base64 in
// tokenizer.json), applied as the crate's spm_precompiled and
// normalizers/precompiled.rs apply it: each extended grapheme cluster
// under 6 bytes is looked up whole, and otherwise (or when it is not
// found) each of its characters; a lookup takes the shortest key that
// starts the string. libsentencepiece is not used for this: its normalizer
// matches the longest key at each byte, not per grapheme, so it can differ
// from Hugging Face's.
//
// A hostile map cannot read outside itself: trie positions and
// replacement offsets are bounds-checked (a bad one is "no match").
#ifndef FAVOR_SERVER_TOKENIZER_PRECOMPILED_NORMALIZER_H_
#define FAVOR_SERVER_TOKENIZER_PRECOMPILED_NORMALIZER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/tokenizer/normalizer.h"

namespace favor::tokenizer {

class PrecompiledNormalizer final : public ChainableNormalizer {
 public:
  // INVALID_ARGUMENT when `base64` is not base64 or not a charsmap (a
  // little-endian u32 trie size, the trie's units, the replacements, which
  // must be UTF-8).
  static absl::StatusOr<std::unique_ptr<PrecompiledNormalizer>> FromBase64(
      absl::string_view base64);
  static absl::StatusOr<std::unique_ptr<PrecompiledNormalizer>> FromCharsmap(
      absl::string_view charsmap);

  absl::Status Transform(const NormalizedString& in,
                         NormalizedString* out) const override;

  // The replacement of the shortest key that starts `chunk`, if any.
  std::optional<absl::string_view> Lookup(absl::string_view chunk) const;

 private:
  PrecompiledNormalizer(std::vector<uint32_t> trie, std::string replacements)
      : trie_(std::move(trie)), replacements_(std::move(replacements)) {}

  std::vector<uint32_t> trie_;
  std::string replacements_;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_PRECOMPILED_NORMALIZER_H_
