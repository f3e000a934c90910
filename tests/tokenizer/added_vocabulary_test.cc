#include "server/tokenizer/added_vocabulary.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace favor::tokenizer {
namespace {

// Segments as "id@begin-end" (id -1 for plain text).
std::vector<std::string> Split(const AddedVocabulary& vocabulary,
                               absl::string_view text) {
  std::vector<AddedVocabulary::Segment> segments;
  vocabulary.Split(text, &segments);
  std::vector<std::string> out;
  for (const auto& s : segments) {
    out.push_back(std::to_string(s.added_id) + "@" +
                  std::to_string(s.range.begin) + "-" +
                  std::to_string(s.range.end));
  }
  return out;
}

AddedVocabulary Make(std::vector<AddedToken> tokens) {
  auto vocabulary = AddedVocabulary::Create(std::move(tokens));
  EXPECT_TRUE(vocabulary.ok()) << vocabulary.status();
  return *std::move(vocabulary);
}

TEST(AddedVocabularyTest, LeftmostThenLongestMatch) {
  const AddedVocabulary vocabulary =
      Make({{1, "[A]"}, {2, "[AB]"}, {3, "B]x"}});
  EXPECT_EQ(Split(vocabulary, "x[AB]y[A]"),
            (std::vector<std::string>{"-1@0-1", "2@1-5", "-1@5-6", "1@6-9"}));
  // "[AB" is not a token: the scan moves on and finds "B]x" inside.
  EXPECT_EQ(Split(vocabulary, "[AB]x"),
            (std::vector<std::string>{"2@0-4", "-1@4-5"}));
  EXPECT_EQ(Split(vocabulary, "[A[AB]"),
            (std::vector<std::string>{"-1@0-2", "2@2-6"}));
}

TEST(AddedVocabularyTest, NoTokensMeansOneSegment) {
  EXPECT_EQ(Split(AddedVocabulary(), "hello"),
            (std::vector<std::string>{"-1@0-5"}));
  EXPECT_EQ(Split(Make({{1, "[A]"}}), "[A][A]"),
            (std::vector<std::string>{"1@0-3", "1@3-6"}));
}

TEST(AddedVocabularyTest, LstripAndRstripTakeTheWhitespaceAround) {
  AddedToken mask{4, "<mask>"};
  mask.lstrip = true;
  mask.rstrip = true;
  const AddedVocabulary vocabulary = Make({mask});
  // "a \u3000<mask>  b": the ideographic space is whitespace too.
  EXPECT_EQ(Split(vocabulary, "a \xE3\x80\x80<mask>  b"),
            (std::vector<std::string>{"-1@0-1", "4@1-13", "-1@13-14"}));
}

TEST(AddedVocabularyTest, CreateRefusesEmptyAndRepeatedTokens) {
  EXPECT_FALSE(AddedVocabulary::Create({{1, ""}}).ok());
  EXPECT_FALSE(AddedVocabulary::Create({{1, "[A]"}, {2, "[A]"}}).ok());
  EXPECT_FALSE(AddedVocabulary::Create({{1, "[A]"}, {1, "[B]"}}).ok());
  const AddedVocabulary vocabulary = Make({{7, "[A]"}});
  ASSERT_NE(vocabulary.Find(7), nullptr);
  EXPECT_EQ(vocabulary.Find(7)->content, "[A]");
  EXPECT_EQ(vocabulary.Find(8), nullptr);
}

}  // namespace
}  // namespace favor::tokenizer
