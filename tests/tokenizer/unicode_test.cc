#include "server/tokenizer/unicode.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::tokenizer {
namespace {

using ::testing::HasSubstr;

TEST(ValidateUtf8Test, AcceptsWellFormedText) {
  EXPECT_TRUE(ValidateUtf8("plain ascii", "text").ok());
  EXPECT_TRUE(ValidateUtf8("é 中 😀 \xF4\x8F\xBF\xBF", "text").ok());
  EXPECT_TRUE(ValidateUtf8(std::string("nul\0inside", 10), "text").ok());
}

TEST(ValidateUtf8Test, NamesTheByteOffsetOfTheFirstBadByte) {
  struct Case {
    std::string text;
    std::string offset;
  };
  for (const Case& c : {
           Case{"ab\xC3", "byte offset 2"},            // truncated
           Case{"x\xC0\x80", "byte offset 1"},         // overlong NUL
           Case{"ok \xED\xA0\x80", "byte offset 3"},   // surrogate
           Case{"\xF4\x90\x80\x80", "byte offset 0"},  // above U+10FFFF
           Case{"abcd\x80", "byte offset 4"},          // stray continuation
           Case{"\xC3\xA9\xFF", "byte offset 2"},      // never valid
       }) {
    const absl::Status status = ValidateUtf8(c.text, "text");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr(c.offset)) << status;
  }
}

TEST(NextCharTest, DecodesEveryLengthAndAdvances) {
  const std::string text = "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80";
  size_t pos = 0;
  EXPECT_EQ(NextChar(text, &pos), U'a');
  EXPECT_EQ(NextChar(text, &pos), U'\u00E9');
  EXPECT_EQ(NextChar(text, &pos), U'\u4E2D');
  EXPECT_EQ(pos, 6u);
  EXPECT_EQ(NextChar(text, &pos), U'\U0001F600');
  EXPECT_EQ(pos, text.size());
  char out[4];
  EXPECT_EQ(EncodeUtf8(U'\U0001F600', out), 4);
  EXPECT_EQ(std::string(out, 4), "\xF0\x9F\x98\x80");
}

TEST(CharacterClassTest, WhitespaceIsUnicodeWhiteSpace) {
  for (char32_t c : {U'\t', U'\n', U'\v', U'\f', U'\r', U' ', U'\u0085',
                     U'\u00A0', U'\u2003', U'\u2028', U'\u3000'}) {
    EXPECT_TRUE(IsWhitespace(c)) << static_cast<uint32_t>(c);
  }
  for (char32_t c : {U'a', U'\u200B', U'\uFEFF', U'\u180E'}) {
    EXPECT_FALSE(IsWhitespace(c)) << static_cast<uint32_t>(c);
  }
}

TEST(CharacterClassTest, ControlIsCcCfCoButNotTabsOrUnassigned) {
  for (char32_t c : {U'\u0000', U'\u0007', U'\u007F', U'\u0085', U'\u200D',
                     U'\uFEFF', U'\uE000', U'\U000F0000'}) {
    EXPECT_TRUE(IsBertControl(c)) << static_cast<uint32_t>(c);
  }
  for (char32_t c : {U'\t', U'\n', U'\r', U'a', U'\u0378', U'\u0301'}) {
    EXPECT_FALSE(IsBertControl(c)) << static_cast<uint32_t>(c);
  }
}

TEST(CharacterClassTest, PunctuationIsAsciiSymbolsOrP) {
  for (char32_t c : {U'!', U'$', U'+', U'^', U'`', U'~', U'\u00AB', U'\u2014',
                     U'\u3001', U'\u061F'}) {
    EXPECT_TRUE(IsBertPunctuation(c)) << static_cast<uint32_t>(c);
  }
  for (char32_t c : {U'a', U'0', U' ', U'\u20AC', U'\u00A9', U'\u4E2D'}) {
    EXPECT_FALSE(IsBertPunctuation(c)) << static_cast<uint32_t>(c);
  }
}

TEST(CharacterClassTest, CjkIdeographsAreHuggingFacesRanges) {
  for (char32_t c : {U'\u4E2D', U'\u3400', U'\uF900', U'\U00020000',
                     U'\U0002B920', U'\U0002F800'}) {
    EXPECT_TRUE(IsCjkIdeograph(c)) << static_cast<uint32_t>(c);
  }
  // Hiragana, Hangul, and the range start Hugging Face's table skips.
  for (char32_t c : {U'\u3042', U'\uD55C', U'\U0002B820', U'a'}) {
    EXPECT_FALSE(IsCjkIdeograph(c)) << static_cast<uint32_t>(c);
  }
}

TEST(DecomposeTest, CanonicalDecompositionFromUtf8proc) {
  char32_t parts[kMaxDecomposition];
  ASSERT_EQ(DecomposeCanonical(U'\u00E9', parts), 2);
  EXPECT_EQ(parts[0], U'e');
  EXPECT_EQ(parts[1], U'\u0301');
  ASSERT_EQ(DecomposeCanonical(U'\uD55C', parts), 3);  // 한 → ᄒ ᅡ ᆫ
  EXPECT_EQ(parts[0], U'\u1112');
  EXPECT_EQ(parts[2], U'\u11AB');
  ASSERT_EQ(DecomposeCanonical(U'\uF900', parts),
            1);  // compatibility ideograph
  EXPECT_EQ(parts[0], U'\u8C48');
  EXPECT_TRUE(IsNonspacingMark(U'\u0301'));
  EXPECT_FALSE(IsNonspacingMark(U'\u0903'));  // Mc
  EXPECT_EQ(CombiningClass(U'\u0301'), 230);
  EXPECT_EQ(CombiningClass(U'e'), 0);
}

TEST(LowercaseTest, FullPerCharacterMapping) {
  char32_t out[2];
  ASSERT_EQ(Lowercase(U'A', out), 1);
  EXPECT_EQ(out[0], U'a');
  ASSERT_EQ(Lowercase(U'\u03A3', out), 1);  // Σ → σ, never ς
  EXPECT_EQ(out[0], U'\u03C3');
  ASSERT_EQ(Lowercase(U'\u0130', out), 2);  // İ → i + combining dot
  EXPECT_EQ(out[0], U'i');
  EXPECT_EQ(out[1], U'\u0307');
  ASSERT_EQ(Lowercase(U'\u1E9E', out), 1);  // ẞ → ß
  EXPECT_EQ(out[0], U'\u00DF');
}

}  // namespace
}  // namespace favor::tokenizer
