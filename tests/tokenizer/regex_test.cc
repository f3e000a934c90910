#include "server/tokenizer/regex.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace favor::tokenizer {
namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

Ranges Find(absl::string_view pattern, absl::string_view text) {
  auto regex = Regex::Compile(pattern);
  EXPECT_TRUE(regex.ok()) << regex.status();
  if (!regex.ok()) return {};
  std::vector<ByteRange> matches;
  const absl::Status found = (*regex)->FindAll(text, &matches);
  EXPECT_TRUE(found.ok()) << found;
  Ranges ranges;
  for (const ByteRange& m : matches) ranges.push_back({m.begin, m.end});
  return ranges;
}

// Oniguruma's find_iter, as the crate iterates it (each case was run
// through npm tokenizers' Split with behavior Removed): an empty match
// where the last match ended is skipped by searching one character on.
TEST(RegexTest, EmptyMatchesFollowOniguruma) {
  EXPECT_EQ(Find("", "ab"), (Ranges{{0, 0}, {1, 1}, {2, 2}}));
  EXPECT_EQ(Find("b*", "abba"), (Ranges{{0, 0}, {1, 3}, {4, 4}}));
  // PCRE2's own loop would match "b" at 1; Oniguruma's never does.
  EXPECT_EQ(Find("(?=b)|b", "abba"), (Ranges{{1, 1}, {2, 2}}));
}

// Where Ruby syntax and PCRE2 read an escape or an anchor differently
// (regex.h); each expectation is what npm tokenizers gives.
TEST(RegexTest, EscapesMeanWhatTheyMeanToOniguruma) {
  // \s takes U+0085 (2 bytes), not U+180E or U+200B.
  EXPECT_EQ(Find("\\s",
                 "a\xC2\x85"
                 "b\xE1\xA0\x8E"
                 "c\xE2\x80\x8B"
                 "d"),
            (Ranges{{1, 3}}));
  EXPECT_EQ(Find("[\\s]", "a\xC2\x85"), (Ranges{{1, 3}}));
  // \w takes a combining mark, connector punctuation and any number.
  EXPECT_EQ(Find("\\w+", "e\xCC\x81x_\xE2\x80\xBFy\xC2\xB2z\xE2\x85\xA0"),
            (Ranges{{0, 15}}));
  EXPECT_EQ(Find("\\h+", "0af g"), (Ranges{{0, 3}}));
  EXPECT_EQ(Find("^a", "a\na"), (Ranges{{0, 1}, {2, 3}}));
  EXPECT_EQ(Find("a$", "a\na"), (Ranges{{0, 1}, {2, 3}}));
  EXPECT_EQ(Find("a.b", "a\nb"), (Ranges{}));
  EXPECT_EQ(Find("(?m:a.b)", "a\nb"), (Ranges{{0, 3}}));
  EXPECT_EQ(Find("\\u00e9", "\xC3\xA9"), (Ranges{{0, 2}}));
  EXPECT_EQ(Find("[[:alpha:]]+", "ab1"), (Ranges{{0, 2}}));
}

TEST(RegexTest, Llama3PatternSplitsAsTiktoken) {
  const std::string llama3 =
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|"
      " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  EXPECT_EQ(Find(llama3, "I'LL pay 12345  now!\n"),
            (Ranges{{0, 1},       // I
                    {1, 4},       // 'LL
                    {4, 8},       // " pay"
                    {8, 9},       // " "
                    {9, 12},      // 123
                    {12, 14},     // 45
                    {14, 15},     // " " (\s+(?!\S))
                    {15, 19},     // " now"
                    {19, 21}}));  // "!\n"
}

TEST(RegexTest, LiteralMatchesItsTextAsItIs) {
  auto literal = Regex::CompileLiteral("a.(b", Regex::Options());
  ASSERT_TRUE(literal.ok()) << literal.status();
  std::vector<ByteRange> matches;
  ASSERT_TRUE((*literal)->FindAll("xa.(bya+b", &matches).ok());
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_EQ(matches[0].begin, 1u);
  EXPECT_EQ(matches[0].end, 5u);
  EXPECT_FALSE(Regex::CompileLiteral("", Regex::Options()).ok());
}

TEST(RegexTest, PatternsThatDoNotCompileAreRefusedWithPcre2sReason) {
  const absl::Status broken = Regex::Compile("(a|b").status();
  EXPECT_EQ(broken.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(broken.message(), "\"(a|b\""))
      << broken.message();
  EXPECT_TRUE(
      absl::StrContains(broken.message(), "missing closing parenthesis"))
      << broken.message();
  EXPECT_TRUE(absl::StrContains(Regex::Compile("[a[b]]").status().message(),
                                "nests a character class"));
  EXPECT_TRUE(absl::StrContains(
      Regex::Compile("[a-z&&[^b]]").status().message(), "&&"));
  EXPECT_TRUE(absl::StrContains(Regex::Compile("[\\S]").status().message(),
                                "inside a character class"));
  EXPECT_FALSE(Regex::Compile("\xC3").ok());  // not UTF-8
  EXPECT_FALSE(Regex::Compile("\\C").ok());   // one byte of a character
}

// Catastrophic backtracking stops at the match limit: the text is refused
// quickly, never searched for ever.
TEST(RegexTest, MatchLimitRefusesTheTextInsteadOfHanging) {
  Regex::Options options;
  options.match_limit = 100'000;
  auto regex = Regex::Compile("(a+)+$", options);
  ASSERT_TRUE(regex.ok());
  const std::string text = std::string(40, 'a') + "!";
  std::vector<ByteRange> matches;
  const absl::Time start = absl::Now();
  const absl::Status found = (*regex)->FindAll(text, &matches);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(found.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(found.message(), "reached its limit"))
      << found.message();
  // The default limit stops it too.
  auto unlimited = Regex::Compile("(a+)+$");
  ASSERT_TRUE(unlimited.ok());
  matches.clear();
  EXPECT_FALSE((*unlimited)->FindAll(text, &matches).ok());
}

}  // namespace
}  // namespace favor::tokenizer
