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

}  // namespace
}  // namespace favor::tokenizer
