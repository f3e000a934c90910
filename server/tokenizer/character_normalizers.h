// Hugging Face's small normalizers that rewrite characters one by one or a
// match at a time: Lowercase, Strip, Replace (a String or Regex pattern),
// Prepend. Each aligns its output as the crate's NormalizedString does
// (AlignedTransform), so offsets through them equal the crate's.
#ifndef FAVOR_SERVER_TOKENIZER_CHARACTER_NORMALIZERS_H_
#define FAVOR_SERVER_TOKENIZER_CHARACTER_NORMALIZERS_H_

#include <memory>
#include <string>
#include <utility>

#include "server/tokenizer/normalizer.h"
#include "server/tokenizer/regex.h"

namespace favor::tokenizer {

// Full per-character lowercase mapping (Rust's char::to_lowercase).
class LowercaseNormalizer final : public ChainableNormalizer {
 public:
  absl::Status Transform(const NormalizedString& in,
                         NormalizedString* out) const override;
};

// Drops leading and/or trailing whitespace (White_Space).
class StripNormalizer final : public ChainableNormalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  absl::Status Transform(const NormalizedString& in,
                         NormalizedString* out) const override;

 private:
  const bool left_;
  const bool right_;
};

// Replaces each match of `pattern` (a String pattern compiled as a literal,
// or a Regex; left to right, not overlapping, as Regex::FindAll finds them)
// with `content`, whose characters take the span of the last character of
// the match (of the character before an empty match). Fails only when the
// pattern reaches its match limit on this text.
class ReplaceNormalizer final : public ChainableNormalizer {
 public:
  ReplaceNormalizer(std::unique_ptr<Regex> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  absl::Status Transform(const NormalizedString& in,
                         NormalizedString* out) const override;

 private:
  const std::unique_ptr<Regex> pattern_;
  const std::string content_;
};

// Puts `prefix` before a non-empty text, with its first character's span.
class PrependNormalizer final : public ChainableNormalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  absl::Status Transform(const NormalizedString& in,
                         NormalizedString* out) const override;

 private:
  const std::string prefix_;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_CHARACTER_NORMALIZERS_H_
