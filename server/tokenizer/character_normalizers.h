// Hugging Face's small normalizers that rewrite characters one by one or a
// literal string at a time: Lowercase, Strip, Replace (a literal pattern),
// Prepend. Each aligns its output as the crate's NormalizedString does
// (AlignedTransform), so offsets through them equal the crate's.
#ifndef FAVOR_SERVER_TOKENIZER_CHARACTER_NORMALIZERS_H_
#define FAVOR_SERVER_TOKENIZER_CHARACTER_NORMALIZERS_H_

#include <string>

#include "server/tokenizer/normalizer.h"

namespace favor::tokenizer {

// Full per-character lowercase mapping (Rust's char::to_lowercase).
class LowercaseNormalizer final : public ChainableNormalizer {
 public:
  void Transform(const NormalizedString& in,
                 NormalizedString* out) const override;
};

// Drops leading and/or trailing whitespace (White_Space).
class StripNormalizer final : public ChainableNormalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void Transform(const NormalizedString& in,
                 NormalizedString* out) const override;

 private:
  const bool left_;
  const bool right_;
};

// Replaces each occurrence of `pattern` (non-empty, left to right, not
// overlapping) with `content`, whose characters take the span of the last
// character of the occurrence.
class ReplaceNormalizer final : public ChainableNormalizer {
 public:
  ReplaceNormalizer(std::string pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void Transform(const NormalizedString& in,
                 NormalizedString* out) const override;

 private:
  const std::string pattern_;
  const std::string content_;
};

// Puts `prefix` before a non-empty text, with its first character's span.
class PrependNormalizer final : public ChainableNormalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  void Transform(const NormalizedString& in,
                 NormalizedString* out) const override;

 private:
  const std::string prefix_;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_CHARACTER_NORMALIZERS_H_
