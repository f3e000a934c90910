#include "server/tokenizer/template_processing.h"

#include <vector>

#include "gtest/gtest.h"

namespace favor::tokenizer {
namespace {

Encoding ThreeTokens() {
  Encoding encoding;
  encoding.Append(7, "a", {0, 1}, false);
  encoding.Append(8, "b", {2, 3}, false);
  encoding.Append(9, "c", {4, 5}, false);
  return encoding;
}

TemplateProcessing ClsSep() {
  auto processing = TemplateProcessing::Create(
      {{false, "[CLS]", 101}, {true, "", 0}, {false, "[SEP]", 102}});
  EXPECT_TRUE(processing.ok());
  return std::move(**processing);
}

TEST(TemplateProcessingTest, PlacesSpecialTokensWithEmptySpans) {
  Encoding encoding = ThreeTokens();
  const TemplateProcessing processing = ClsSep();
  EXPECT_EQ(processing.added_tokens(), 2u);
  processing.Process(&encoding);
  EXPECT_EQ(encoding.ids, (std::vector<int32_t>{101, 7, 8, 9, 102}));
  EXPECT_EQ(encoding.tokens,
            (std::vector<absl::string_view>{"[CLS]", "a", "b", "c", "[SEP]"}));
  EXPECT_EQ(encoding.spans,
            (std::vector<TokenSpan>{{0, 0}, {0, 1}, {2, 3}, {4, 5}, {0, 0}}));
  EXPECT_EQ(encoding.special_tokens_mask,
            (std::vector<uint8_t>{1, 0, 0, 0, 1}));
}

TEST(TemplateProcessingTest, TheSequenceMustAppearOnce) {
  EXPECT_FALSE(TemplateProcessing::Create({{false, "[CLS]", 1}}).ok());
  EXPECT_FALSE(TemplateProcessing::Create({{true, "", 0}, {true, "", 0}}).ok());
}

TEST(TruncationTest, RightAndLeftKeepRoomForSpecialTokens) {
  EncodeOptions options;
  options.max_tokens = 4;
  Encoding right = ThreeTokens();
  Truncate(options, 2, &right);
  EXPECT_EQ(right.ids, (std::vector<int32_t>{7, 8}));
  options.truncation_side = TruncationSide::kLeft;
  Encoding left = ThreeTokens();
  Truncate(options, 2, &left);
  EXPECT_EQ(left.ids, (std::vector<int32_t>{8, 9}));
  EXPECT_EQ(left.spans, (std::vector<TokenSpan>{{2, 3}, {4, 5}}));
  options.max_tokens = 0;  // no truncation
  Encoding all = ThreeTokens();
  Truncate(options, 2, &all);
  EXPECT_EQ(all.size(), 3u);
}

TEST(TruncationTest, TooSmallForTheSpecialTokensIsAnError) {
  EncodeOptions options;
  options.max_tokens = 1;
  EXPECT_EQ(CheckTruncation(options, 2).code(),
            absl::StatusCode::kInvalidArgument);
  options.max_tokens = 2;
  EXPECT_TRUE(CheckTruncation(options, 2).ok());
}

}  // namespace
}  // namespace favor::tokenizer
