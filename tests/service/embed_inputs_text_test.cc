// What text inputs become (embed_inputs.h): the tokenizer's ids with the
// special tokens in place after truncation, framed windows, and byte spans
// turned into the tokens they overlap.
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/service/embed_inputs.h"
#include "server/tokenizer/tokenizer_builders.h"
#include "tests/service/test_server.h"

namespace favor::service {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::shared_ptr<const tokenizer::Tokenizer> Bert() {
  return testing::SmallVocabTokenizer();
}

v1::EmbedInput Text(const std::string& text,
                    std::vector<std::pair<int64_t, int64_t>> spans = {}) {
  v1::EmbedInput input;
  input.set_text(text);
  for (const auto& [begin, end] : spans) {
    v1::Span* span = input.add_spans();
    span->set_begin(begin);
    span->set_end(end);
  }
  return input;
}

EmbedLimits Limits(int64_t max_tokens_per_input) {
  EmbedLimits limits;
  limits.max_tokens_per_input = max_tokens_per_input;
  return limits;
}

ResolvedEmbedOptions Truncation(v1::Truncation truncation,
                                int64_t overlap = 0) {
  ResolvedEmbedOptions options;
  options.truncation = truncation;
  options.chunk_overlap_tokens = overlap;
  return options;
}

// A text is encoded no further than its input can use: to the window with
// truncation or without it (the rest is counted, never held), to the call's
// tokens when chunked. So a 16 MiB text does not build a 16-million-token
// encoding only to be truncated or refused; the counts stay exact.
TEST(TextInputTest, EncodesNoMoreTokensThanTheInputCanUse) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "the cat ";  // 2000 tokens
  EmbedLimits limits = Limits(5);  // 3 tokens of text beside [CLS] [SEP]
  limits.max_tokens_per_call = 100;
  for (const v1::Truncation truncation :
       {v1::TRUNCATION_NONE, v1::TRUNCATION_LEFT, v1::TRUNCATION_RIGHT,
        v1::TRUNCATION_CHUNK}) {
    SCOPED_TRACE(v1::Truncation_Name(truncation));
    testing::HeldTokensTokenizer watched(Bert());
    const auto prepared = PrepareTextInput(1, Text(text), watched,
                                           Truncation(truncation), limits);
    if (truncation == v1::TRUNCATION_CHUNK) {
      EXPECT_THAT(prepared.status().message(),
                  HasSubstr("inputs[1].text has 2000 tokens; chunked, they "
                            "need more than the 100 a call may have "
                            "(max_tokens_per_call)"));
      EXPECT_LE(watched.most_held(), 4u * 100);
    } else if (truncation == v1::TRUNCATION_NONE) {
      EXPECT_THAT(prepared.status().message(),
                  HasSubstr("inputs[1].text has 2002 tokens; at most 5 "
                            "(max_tokens_per_input)"));
      EXPECT_LE(watched.most_held(), 4u * 3);
    } else {
      ASSERT_TRUE(prepared.ok()) << prepared.status();
      EXPECT_EQ(prepared->num_truncated_tokens, 1997);
      EXPECT_THAT(prepared->token_ids,
                  truncation == v1::TRUNCATION_LEFT
                      ? ElementsAre(2, 6, 5, 6, 3)    // cat the cat
                      : ElementsAre(2, 5, 6, 5, 3));  // the cat the
      EXPECT_LE(watched.most_held(), 4u * 3);
    }
  }
  // A chunked text within the call's tokens is windowed whole.
  std::string fits;
  for (int i = 0; i < 30; ++i) fits += "the cat ";  // 60 tokens
  testing::HeldTokensTokenizer watched(Bert());
  const auto windows = PrepareTextInput(
      0, Text(fits), watched, Truncation(v1::TRUNCATION_CHUNK), limits);
  ASSERT_TRUE(windows.ok()) << windows.status();
  EXPECT_EQ(windows->window_offsets.size(), 21u);  // 20 windows of 3
}

TEST(TextInputTest, TheTokenizersIdsFramedWithItsSpecialTokens) {
  const auto bert = Bert();
  auto prepared = PrepareTextInput(0, Text("The cats sat."), *bert,
                                   ResolvedEmbedOptions(), Limits(64));
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_THAT(prepared->token_ids, ElementsAre(2, 5, 6, 10, 7, 11, 3));
  EXPECT_EQ(prepared->num_truncated_tokens, 0);
  EXPECT_TRUE(prepared->window_offsets.empty());
}

TEST(TextInputTest, TruncationKeepsTheSpecialTokensInPlace) {
  const auto bert = Bert();
  auto right = PrepareTextInput(0, Text("the cat sat on the mat"), *bert,
                                Truncation(v1::TRUNCATION_RIGHT), Limits(5));
  ASSERT_TRUE(right.ok()) << right.status();
  EXPECT_THAT(right->token_ids, ElementsAre(2, 5, 6, 7, 3));
  EXPECT_EQ(right->num_truncated_tokens, 3);
  auto left = PrepareTextInput(0, Text("the cat sat on the mat"), *bert,
                               Truncation(v1::TRUNCATION_LEFT), Limits(5));
  ASSERT_TRUE(left.ok()) << left.status();
  EXPECT_THAT(left->token_ids, ElementsAre(2, 8, 5, 9, 3));
  const auto refused =
      PrepareTextInput(4, Text("the cat sat on the mat"), *bert,
                       ResolvedEmbedOptions(), Limits(5));
  EXPECT_THAT(refused.status().message(),
              HasSubstr("inputs[4].text has 8 tokens; at most 5 "
                        "(max_tokens_per_input)"));
}

TEST(TextInputTest, ChunkFramesEveryWindow) {
  const auto bert = Bert();
  // 6 tokens of text in windows of 5 - 2 = 3 sharing 1: [0,3) [2,5) [4,6).
  auto prepared =
      PrepareTextInput(0, Text("the cat sat on the mat"), *bert,
                       Truncation(v1::TRUNCATION_CHUNK, 1), Limits(5));
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_THAT(prepared->token_ids,
              ElementsAre(2, 5, 6, 7, 3, 2, 7, 8, 5, 3, 2, 5, 9, 3));
  EXPECT_THAT(prepared->window_offsets, ElementsAre(0, 5, 10, 14));
  // An overlap that leaves a window no new token is refused.
  const auto refused =
      PrepareTextInput(0, Text("the cat"), *bert,
                       Truncation(v1::TRUNCATION_CHUNK, 1), Limits(3));
  EXPECT_THAT(refused.status().message(),
              HasSubstr("chunk_overlap_tokens is 1; a window holds 1 tokens"));
}

TEST(TextInputTest, SpansCoverTheTokensTheyOverlap) {
  const auto bert = Bert();
  // "the cats sat." : the@0-3 cat@4-7 ##s@7-8 sat@9-12 .@12-13
  auto prepared = PrepareTextInput(
      0, Text("the cats sat.", {{0, 3}, {4, 8}, {5, 6}, {3, 4}, {0, 13}}),
      *bert, ResolvedEmbedOptions(), Limits(64));
  // {3, 4} is the space alone.
  EXPECT_THAT(prepared.status().message(),
              HasSubstr("inputs[0].spans[3] is [3, 4): it covers no token"));
  prepared = PrepareTextInput(
      0, Text("the cats sat.", {{0, 3}, {4, 8}, {5, 6}, {2, 10}, {0, 13}}),
      *bert, ResolvedEmbedOptions(), Limits(64));
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  // Positions in [CLS] the cat ##s sat . [SEP]; never a special token.
  EXPECT_THAT(prepared->spans,
              ElementsAre(TokenRange{1, 2}, TokenRange{2, 4}, TokenRange{2, 3},
                          TokenRange{1, 5}, TokenRange{1, 6}));
}

TEST(TextInputTest, SpansCountTheTokensLeftAfterTruncation) {
  const auto bert = Bert();
  auto prepared =
      PrepareTextInput(0, Text("the cat sat on the mat", {{8, 22}}), *bert,
                       Truncation(v1::TRUNCATION_RIGHT), Limits(5));
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_THAT(prepared->spans, ElementsAre(TokenRange{3, 4}));  // "sat"
  const auto refused =
      PrepareTextInput(0, Text("the cat sat on the mat", {{12, 22}}), *bert,
                       Truncation(v1::TRUNCATION_RIGHT), Limits(5));
  EXPECT_THAT(refused.status().message(),
              HasSubstr("covers no token left after truncation"));
}

TEST(TextInputTest, InvalidUtf8NamesTheInputAndTheOffset) {
  const auto refused = PrepareTextInput(2, Text("the \xC3("), *Bert(),
                                        ResolvedEmbedOptions(), Limits(64));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("inputs[2].text: text is not valid UTF-8"));
  EXPECT_THAT(refused.status().message(), HasSubstr("byte offset 4"));
}

TEST(TextInputTest, NoRoomBesideTheSpecialTokens) {
  const auto refused = PrepareTextInput(0, Text("the"), *Bert(),
                                        ResolvedEmbedOptions(), Limits(2));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("max_tokens_per_input (2) leaves no room for text"));
}

// Text a tokenizer drops whole (whitespace, a soft hyphen) for a model that
// adds no special tokens is refused naming the input, rather than meeting
// the batcher's "num_tokens must be >= 1", which names no input.
TEST(TextInputTest, TextWithNoTokensAndNoSpecialTokensNamesTheInput) {
  const auto bare = tokenizer::TokenizerFromHuggingFaceJson(
      R"({"normalizer": {"type": "BertNormalizer"},
          "pre_tokenizer": {"type": "BertPreTokenizer"},
          "post_processor": null,
          "model": {"type": "WordPiece", "unk_token": "[UNK]",
                    "vocab": {"[UNK]": 0, "the": 1}}})",
      "tokenizer.json");
  ASSERT_TRUE(bare.ok()) << bare.status();
  for (const v1::Truncation truncation :
       {v1::TRUNCATION_NONE, v1::TRUNCATION_RIGHT, v1::TRUNCATION_CHUNK}) {
    const auto refused = PrepareTextInput(3, Text(" \t\xC2\xAD "), **bare,
                                          Truncation(truncation), Limits(8));
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(refused.status().message(),
                HasSubstr("inputs[3].text has no tokens"));
  }
  const auto the = PrepareTextInput(0, Text(" the "), **bare,
                                    ResolvedEmbedOptions(), Limits(8));
  ASSERT_TRUE(the.ok()) << the.status();
  EXPECT_THAT(the->token_ids, ElementsAre(1));
  // With special tokens the text is its [CLS] [SEP].
  const auto framed = PrepareTextInput(0, Text(" \t "), *Bert(),
                                       ResolvedEmbedOptions(), Limits(8));
  ASSERT_TRUE(framed.ok()) << framed.status();
  EXPECT_THAT(framed->token_ids, ElementsAre(2, 3));
}

}  // namespace
}  // namespace favor::service
