#include "server/tokenizer/split_pre_tokenizer.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/tokenizer/character_normalizers.h"

namespace favor::tokenizer {
namespace {

std::vector<std::string> Words(absl::string_view pattern, bool regex,
                               SplitBehavior behavior, bool invert,
                               absl::string_view text) {
  auto compiled = regex ? Regex::Compile(pattern)
                        : Regex::CompileLiteral(pattern, Regex::Options());
  EXPECT_TRUE(compiled.ok()) << compiled.status();
  SplitPreTokenizer split(*std::move(compiled), behavior, invert);
  std::vector<ByteRange> ranges;
  EXPECT_TRUE(split.Split(text, &ranges).ok());
  std::vector<std::string> words;
  for (const ByteRange& r : ranges) {
    words.emplace_back(text.substr(r.begin, r.end - r.begin));
  }
  return words;
}

using W = std::vector<std::string>;

// The crate's own example (NormalizedString::split's comment).
TEST(SplitPreTokenizerTest, EachBehaviorOnTheCratesExample) {
  const absl::string_view text = "the-final--countdown";
  auto split = [&](SplitBehavior behavior) {
    return Words("-", false, behavior, false, text);
  };
  EXPECT_EQ(split(SplitBehavior::kRemoved), (W{"the", "final", "countdown"}));
  EXPECT_EQ(split(SplitBehavior::kIsolated),
            (W{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split(SplitBehavior::kMergedWithPrevious),
            (W{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(split(SplitBehavior::kMergedWithNext),
            (W{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split(SplitBehavior::kContiguous),
            (W{"the", "-", "final", "--", "countdown"}));
}

TEST(SplitPreTokenizerTest, InvertAppliesTheBehaviorToWhatLiesBetween) {
  EXPECT_EQ(Words("[a-z]+", true, SplitBehavior::kRemoved, true,
                  "the-final--countdown"),
            (W{"the", "final", "countdown"}));
  EXPECT_EQ(Words("[a-z]+", true, SplitBehavior::kMergedWithPrevious, true,
                  "the-final--countdown"),
            (W{"the-", "final--", "countdown"}));
  EXPECT_EQ(Words("\\s+", true, SplitBehavior::kIsolated, true, ""), (W{}));
}

// Byte ranges of multi-byte text; a match at either end.
TEST(SplitPreTokenizerTest, RangesAreBytes) {
  EXPECT_EQ(Words("\\s+", true, SplitBehavior::kMergedWithNext, false,
                  " h\xC3\xA9llo  w\xC3\xB6rld "),
            (W{" h\xC3\xA9llo", "  w\xC3\xB6rld", " "}));
}

// Replace with a Regex: the replacement takes the span of the match's last
// character (SpmConverter's " {2,}" → "▁").
TEST(ReplaceNormalizerTest, RegexReplacementTakesTheLastCharactersSpan) {
  auto pattern = Regex::Compile(" {2,}");
  ASSERT_TRUE(pattern.ok());
  ReplaceNormalizer replace(*std::move(pattern), "\xE2\x96\x81");
  NormalizedString out;
  ASSERT_TRUE(replace.Normalize("a   b\xC3\xA9  ", 10, &out).ok());
  EXPECT_EQ(out.text(),
            "a\xE2\x96\x81"
            "b\xC3\xA9\xE2\x96\x81");
  EXPECT_EQ(out.SourceSpan(0, 1), (TokenSpan{10, 11}));   // a
  EXPECT_EQ(out.SourceSpan(1, 4), (TokenSpan{13, 14}));   // ▁: 3rd space
  EXPECT_EQ(out.SourceSpan(4, 5), (TokenSpan{14, 15}));   // b
  EXPECT_EQ(out.SourceSpan(5, 7), (TokenSpan{15, 17}));   // é
  EXPECT_EQ(out.SourceSpan(7, 10), (TokenSpan{18, 19}));  // ▁: 2nd space
}

// An empty match inserts the content with the span of the character
// before it.
TEST(ReplaceNormalizerTest, EmptyMatchesInsertAfterTheCharacterBefore) {
  auto pattern = Regex::Compile("(?=b)");
  ASSERT_TRUE(pattern.ok());
  ReplaceNormalizer replace(*std::move(pattern), "-");
  NormalizedString out;
  ASSERT_TRUE(replace.Normalize("abb", 0, &out).ok());
  EXPECT_EQ(out.text(), "a-b-b");
  EXPECT_EQ(out.SourceSpan(1, 2), (TokenSpan{0, 1}));
  EXPECT_EQ(out.SourceSpan(3, 4), (TokenSpan{1, 2}));
}

}  // namespace
}  // namespace favor::tokenizer
