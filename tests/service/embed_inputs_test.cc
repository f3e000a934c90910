// What token id inputs become (embed_inputs.h): truncation, the windows of
// TRUNCATION_CHUNK, and spans moved with the kept tokens.
#include "server/service/embed_inputs.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::service {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<int64_t> Sizes(const std::vector<TokenRange>& ranges) {
  std::vector<int64_t> sizes;
  for (const TokenRange& range : ranges) sizes.push_back(range.size());
  return sizes;
}

TEST(ChunkWindowsTest, WindowsOverlapAndCoverEveryToken) {
  EXPECT_THAT(ChunkWindows(10, 64, 8), ElementsAre(TokenRange{0, 10}));
  EXPECT_THAT(ChunkWindows(64, 64, 8), ElementsAre(TokenRange{0, 64}));
  EXPECT_THAT(ChunkWindows(150, 64, 8),
              ElementsAre(TokenRange{0, 64}, TokenRange{56, 120},
                          TokenRange{112, 150}));
  EXPECT_THAT(ChunkWindows(128, 64, 0),
              ElementsAre(TokenRange{0, 64}, TokenRange{64, 128}));
  // A million tokens in windows of 512 sharing 64: each window starts 448
  // after the last, and the last ends at the input's end.
  const std::vector<TokenRange> windows = ChunkWindows(1000000, 512, 64);
  EXPECT_EQ(windows.size(), 2232u);
  EXPECT_EQ(windows.back().end, 1000000);
  EXPECT_EQ(windows[1].begin, 448);
  EXPECT_THAT(Sizes(ChunkWindows(7, 3, 1)), ElementsAre(3, 3, 3));
}

TEST(KeptTokensTest, TruncationKeepsTheStartOrTheEnd) {
  EXPECT_EQ(*KeptTokens("x", 10, 64, 64, v1::TRUNCATION_NONE),
            (TokenRange{0, 10}));
  EXPECT_EQ(*KeptTokens("x", 70, 64, 64, v1::TRUNCATION_RIGHT),
            (TokenRange{0, 64}));
  EXPECT_EQ(*KeptTokens("x", 70, 64, 64, v1::TRUNCATION_LEFT),
            (TokenRange{6, 70}));
  // Text: 62 tokens of text fit beside 2 special tokens; the message counts
  // them.
  const auto refused =
      KeptTokens("inputs[1].text", 70, 62, 64, v1::TRUNCATION_NONE);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("inputs[1].text has 72 tokens; at most 64 "
                        "(max_tokens_per_input)"));
}

v1::EmbedInput Ids(int count) {
  v1::EmbedInput input;
  for (int i = 0; i < count; ++i) input.add_token_ids(i);
  return input;
}

void AddSpan(v1::EmbedInput& input, int64_t begin, int64_t end) {
  v1::Span* span = input.add_spans();
  span->set_begin(begin);
  span->set_end(end);
}

TEST(PrepareTokenIdInputTest, SpansMoveWithTheKeptTokens) {
  EmbedLimits limits;
  limits.max_tokens_per_input = 8;
  limits.vocab_size = 100;
  ResolvedEmbedOptions options;
  options.truncation = v1::TRUNCATION_LEFT;
  v1::EmbedInput input = Ids(10);
  AddSpan(input, 0, 3);  // two of its tokens are dropped
  AddSpan(input, 4, 10);
  auto prepared = PrepareTokenIdInput(0, input, options, limits);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_THAT(prepared->token_ids, ElementsAre(2, 3, 4, 5, 6, 7, 8, 9));
  EXPECT_EQ(prepared->num_truncated_tokens, 2);
  EXPECT_THAT(prepared->spans, ElementsAre(TokenRange{0, 1}, TokenRange{2, 8}));
  v1::EmbedInput dropped = Ids(10);
  AddSpan(dropped, 0, 2);
  const auto refused = PrepareTokenIdInput(3, dropped, options, limits);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("inputs[3].spans[0] is [0, 2): it covers no token "
                        "left after truncation"));
}

TEST(PrepareTokenIdInputTest, ChunkCutsWindowsBackToBack) {
  EmbedLimits limits;
  limits.max_tokens_per_input = 4;
  ResolvedEmbedOptions options;
  options.truncation = v1::TRUNCATION_CHUNK;
  options.chunk_overlap_tokens = 1;
  auto prepared = PrepareTokenIdInput(0, Ids(7), options, limits);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_THAT(prepared->token_ids, ElementsAre(0, 1, 2, 3, 3, 4, 5, 6));
  EXPECT_THAT(prepared->window_offsets, ElementsAre(0, 4, 8));
  EXPECT_EQ(prepared->num_windows(), 2);
  EXPECT_EQ(prepared->num_truncated_tokens, 0);
}

TEST(PrepareTokenIdInputTest, IdsOverTheVocabularyAreRefused) {
  EmbedLimits limits;
  limits.vocab_size = 5;
  const auto refused =
      PrepareTokenIdInput(2, Ids(7), ResolvedEmbedOptions(), limits);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("inputs[2].token_ids[5] is 5; must be in [0, 5) "
                        "(vocab_size)"));
}

}  // namespace
}  // namespace favor::service
