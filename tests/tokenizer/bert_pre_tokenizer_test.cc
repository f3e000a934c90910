#include "server/tokenizer/bert_pre_tokenizer.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace favor::tokenizer {
namespace {

using Words =
    std::vector<std::pair<std::string, std::pair<uint32_t, uint32_t>>>;

Words Split(absl::string_view text) {
  std::vector<ByteRange> ranges;
  EXPECT_TRUE(BertPreTokenizer().Split(text, &ranges).ok());
  Words words;
  for (const ByteRange& r : ranges) {
    words.push_back(
        {std::string(text.substr(r.begin, r.end - r.begin)), {r.begin, r.end}});
  }
  return words;
}

// Hugging Face's own test of BertPreTokenizer (pre_tokenizers/bert.rs).
TEST(BertPreTokenizerTest, SplitsOnWhitespaceAndIsolatesPunctuation) {
  EXPECT_EQ(Split("Hey friend!     How are you?!?"), (Words{{"Hey", {0, 3}},
                                                            {"friend", {4, 10}},
                                                            {"!", {10, 11}},
                                                            {"How", {16, 19}},
                                                            {"are", {20, 23}},
                                                            {"you", {24, 27}},
                                                            {"?", {27, 28}},
                                                            {"!", {28, 29}},
                                                            {"?", {29, 30}}}));
}

TEST(BertPreTokenizerTest, UnicodePunctuationAndWhitespace) {
  // 日本 。 test \u3000 «x» : ideographic full stop and guillemets are P*.
  EXPECT_EQ(Split("\xE6\x97\xA5\xE6\x9C\xAC\xE3\x80\x82test\xE3\x80\x80"
                  "\xC2\xABx\xC2\xBB"),
            (Words{{"\xE6\x97\xA5\xE6\x9C\xAC", {0, 6}},
                   {"\xE3\x80\x82", {6, 9}},
                   {"test", {9, 13}},
                   {"\xC2\xAB", {16, 18}},
                   {"x", {18, 19}},
                   {"\xC2\xBB", {19, 21}}}));
}

TEST(BertPreTokenizerTest, SymbolsThatAreNotPunctuationStayInWords) {
  // € is Sc and © is So: not punctuation, so they do not split.
  EXPECT_EQ(Split("5\xE2\x82\xAC \xC2\xA9x"),
            (Words{{"5\xE2\x82\xAC", {0, 4}}, {"\xC2\xA9x", {5, 8}}}));
}

TEST(BertPreTokenizerTest, EmptyAndBlankTextHaveNoWords) {
  EXPECT_TRUE(Split("").empty());
  EXPECT_TRUE(Split("  \t\n ").empty());
}

}  // namespace
}  // namespace favor::tokenizer
