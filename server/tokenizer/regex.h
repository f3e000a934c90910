// A compiled regular expression for tokenizer.json's Regex patterns (the
// Replace normalizer, the Split pre-tokenizer), found in text the way Hugging
// Face's crate finds them with Oniguruma, on Debian's PCRE2 (libpcre2-8, in
// UTF mode with Unicode properties). regex.cc is the adapter: no header
// includes PCRE2.
//
// Oniguruma (Ruby syntax, which the crate uses) and PCRE2 agree on what
// real files use (\p{L}, \p{N}, lookaheads, possessive and atomic groups,
// (?i:...)). Where they differ, the pattern is rewritten before PCRE2
// compiles it, so that it means what it means to the crate:
//   - \s is Unicode White_Space (PCRE2's leaves out U+0085 and takes
//     U+180E);
//   - \w is a letter, mark, number or connector punctuation (PCRE2's is
//     letters, numbers and "_" only);
//   - \h is a hexadecimal digit (PCRE2's is horizontal space);
//   - ^ and $ match at every line (Ruby's are always multi-line);
//   - the inline option m is "dot matches newline" (PCRE2's s).
// A nested character class ([a[b]]) or class intersection (&&), which only
// Oniguruma has, is refused at compile time rather than read differently.
//
// Matching is bounded: PCRE2's match limit stops catastrophic backtracking
// (a pattern like (a+)+$ on a long run of a's), and a call that reaches it
// fails with INVALID_ARGUMENT for that text rather than running for ever.
#ifndef FAVOR_SERVER_TOKENIZER_REGEX_H_
#define FAVOR_SERVER_TOKENIZER_REGEX_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/tokenizer/pre_tokenizer.h"

namespace favor::tokenizer {

class Regex {
 public:
  struct Options {
    // Most backtracking steps (PCRE2's match limit) one search may take
    // before the text is refused. Real patterns take a few per character;
    // 10 million is about 0.1 s of one core.
    uint32_t match_limit = 10'000'000;
    // Most memory one search may use for backtracking, in KiB (PCRE2's
    // heap limit).
    uint32_t heap_limit_kib = 64 * 1024;
  };

  // Compiles `pattern` (Oniguruma's Ruby syntax, as tokenizer.json holds
  // it). INVALID_ARGUMENT with the pattern and PCRE2's message (and where)
  // when it does not compile.
  static absl::StatusOr<std::unique_ptr<Regex>> Compile(
      absl::string_view pattern, const Options& options);
  static absl::StatusOr<std::unique_ptr<Regex>> Compile(
      absl::string_view pattern) {
    return Compile(pattern, Options());
  }
  // Matches `literal` (non-empty) as it is, no character special.
  static absl::StatusOr<std::unique_ptr<Regex>> CompileLiteral(
      absl::string_view literal, const Options& options);

  // Appends to *matches the matches in `text` (valid UTF-8), left to right
  // and not overlapping, as Oniguruma's find_iter gives them: each search
  // starts where the last match ended, and an empty match right where the
  // last match ended is skipped by searching again one character later.
  // INVALID_ARGUMENT (naming the pattern and the byte) when a search reaches
  // a limit of Options. Const: safe from many threads at once.
  absl::Status FindAll(absl::string_view text,
                       std::vector<ByteRange>* matches) const;

  // The pattern as tokenizer.json gave it.
  const std::string& pattern() const { return pattern_; }

  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Implementation details follow.
  struct Compiled;  // PCRE2's code and match context (regex.cc)

 private:
  Regex(std::string pattern, std::unique_ptr<Compiled> compiled);

  const std::string pattern_;
  const std::unique_ptr<Compiled> compiled_;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_REGEX_H_
