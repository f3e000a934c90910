#include "server/tokenizer/pipeline_tokenizer.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/tokenizer/tokenizer_builders.h"

namespace favor::tokenizer {
namespace {

using ::testing::HasSubstr;

constexpr char kVocab[] =
    "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n,\nworld\n!\nthe\ncat\nsat\n"
    "on\nmat\n##s\nun\n##aff\n##able\na\n##a\ncafe\n";

std::unique_ptr<Tokenizer> Bert() {
  const VocabTxtOptions options;  // a named object: GCC 12 warns
                                  // (wrongly) on a braced temporary
  auto tokenizer = TokenizerFromVocabTxt(kVocab, options, "test vocab.txt");
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  return *std::move(tokenizer);
}

// "token@begin-end" for each token.
std::string Describe(const Encoding& encoding) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < encoding.size(); ++i) {
    parts.push_back(absl::StrCat(encoding.tokens[i], "@",
                                 encoding.spans[i].begin, "-",
                                 encoding.spans[i].end));
  }
  return absl::StrJoin(parts, " ");
}

std::string Encode(const Tokenizer& tokenizer, absl::string_view text,
                   const EncodeOptions& options = {}) {
  auto encoding = tokenizer.Encode(text, options);
  if (!encoding.ok()) return std::string(encoding.status().ToString());
  return Describe(*encoding);
}

TEST(PipelineTokenizerTest, EncodesWithByteSpansAndSpecialTokens) {
  const auto bert = Bert();
  EXPECT_EQ(Encode(*bert, "Hello, WORLD!"),
            "[CLS]@0-0 hello@0-5 ,@5-6 world@7-12 !@12-13 [SEP]@0-0");
  // Accents stripped, spans in the input's bytes: "Café" is 5 bytes.
  EXPECT_EQ(Encode(*bert, "the Caf\xC3\xA9 cats"),
            "[CLS]@0-0 the@0-3 cafe@4-9 cat@10-13 ##s@13-14 [SEP]@0-0");
  const auto encoding = bert->Encode("unaffable");
  ASSERT_TRUE(encoding.ok());
  EXPECT_EQ(encoding->ids, (std::vector<int32_t>{2, 15, 16, 17, 3}));
  EXPECT_EQ(encoding->special_tokens_mask,
            (std::vector<uint8_t>{1, 0, 0, 0, 1}));
}

TEST(PipelineTokenizerTest, SpecialTokensInTheTextAreMatchedFirst) {
  const auto bert = Bert();
  EXPECT_EQ(Encode(*bert, "the [MASK] sat"),
            "[CLS]@0-0 the@0-3 [MASK]@4-10 sat@11-14 [SEP]@0-0");
  // Lowercase "[mask]" is text: split as punctuation and an unknown word.
  EXPECT_EQ(Encode(*bert, "[mask]"),
            "[CLS]@0-0 [UNK]@0-1 [UNK]@1-5 [UNK]@5-6 [SEP]@0-0");
}

TEST(PipelineTokenizerTest, WithoutSpecialTokens) {
  EncodeOptions options;
  options.add_special_tokens = false;
  EXPECT_EQ(Encode(*Bert(), "hello world", options), "hello@0-5 world@6-11");
}

TEST(PipelineTokenizerTest, TruncationKeepsSpecialTokensInPlace) {
  const auto bert = Bert();
  EncodeOptions options;
  options.max_tokens = 4;
  EXPECT_EQ(Encode(*bert, "the cat sat on", options),
            "[CLS]@0-0 the@0-3 cat@4-7 [SEP]@0-0");
  options.truncation_side = TruncationSide::kLeft;
  EXPECT_EQ(Encode(*bert, "the cat sat on", options),
            "[CLS]@0-0 sat@8-11 on@12-14 [SEP]@0-0");
  options.max_tokens = 1;
  EXPECT_THAT(Encode(*bert, "the cat", options),
              HasSubstr("max_tokens 1 leaves no room for the 2 special"));
}

// Truncating while encoding keeps what truncating the whole encoding keeps
// (the reference: the untruncated encoding, sliced and framed), counts what
// it drops, and never holds the whole: a long text truncated to a few tokens
// grows no vector past a few times what it keeps.
TEST(PipelineTokenizerTest, TruncationHoldsOnlyWhatItKeeps) {
  const auto bert = Bert();
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "the cats sat on the mat, unaffable! ";
  EncodeOptions bare;
  bare.add_special_tokens = false;
  const auto whole = bert->Encode(text, bare);
  ASSERT_TRUE(whole.ok()) << whole.status();
  const size_t length = whole->size();
  ASSERT_EQ(length, 5000u * 12);
  for (const TruncationSide side :
       {TruncationSide::kRight, TruncationSide::kLeft}) {
    for (const size_t max_tokens : {2, 3, 9, 1000}) {
      SCOPED_TRACE(testing::Message()
                   << "max_tokens " << max_tokens
                   << (side == TruncationSide::kLeft ? " left" : " right"));
      EncodeOptions options;
      options.max_tokens = max_tokens;
      options.truncation_side = side;
      const auto truncated = bert->Encode(text, options);
      ASSERT_TRUE(truncated.ok()) << truncated.status();
      const size_t kept = max_tokens - 2;
      Encoding expected = *whole;
      if (side == TruncationSide::kLeft) {
        expected.EraseFront(length - kept);
      } else {
        expected.EraseBack(length - kept);
      }
      bert->AddSpecialTokens(&expected);
      EXPECT_EQ(Describe(*truncated), Describe(expected));
      EXPECT_EQ(truncated->ids, expected.ids);
      EXPECT_EQ(truncated->special_tokens_mask, expected.special_tokens_mask);
      EXPECT_EQ(truncated->num_truncated_tokens, length - kept);
      // The post-processor framed the tokens in new vectors; without it the
      // vectors Encode grew are the answer's.
      EncodeOptions unframed = options;
      unframed.add_special_tokens = false;
      const auto content = bert->Encode(text, unframed);
      ASSERT_TRUE(content.ok()) << content.status();
      EXPECT_EQ(content->num_truncated_tokens, length - max_tokens);
      EXPECT_LE(content->ids.capacity(), 4 * max_tokens);
      EXPECT_LE(content->spans.capacity(), 4 * max_tokens);
    }
  }
}

TEST(PipelineTokenizerTest, AddSpecialTokensFramesAsEncodeDoes) {
  const auto bert = Bert();
  EXPECT_EQ(bert->num_added_special_tokens(), 2u);
  EncodeOptions bare;
  bare.add_special_tokens = false;
  auto content = bert->Encode("the cat sat on", bare);
  ASSERT_TRUE(content.ok());
  // A slice of the content, framed: what the service embeds as one window.
  content->EraseFront(1);
  content->EraseBack(1);
  bert->AddSpecialTokens(&*content);
  EXPECT_EQ(Describe(*content), "[CLS]@0-0 cat@4-7 sat@8-11 [SEP]@0-0");
  EXPECT_EQ(content->special_tokens_mask, (std::vector<uint8_t>{1, 0, 0, 1}));
  // Framing nothing gives the special tokens alone, in order.
  Encoding empty;
  bert->AddSpecialTokens(&empty);
  EXPECT_EQ(Describe(empty), "[CLS]@0-0 [SEP]@0-0");
}

TEST(PipelineTokenizerTest, RefusesEmptyAndInvalidText) {
  const auto bert = Bert();
  EXPECT_EQ(bert->Encode("").status().code(),
            absl::StatusCode::kInvalidArgument);
  const auto invalid = bert->Encode("the \xC3(");
  EXPECT_EQ(invalid.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(invalid.status().message(), HasSubstr("byte offset 4"));
}

TEST(PipelineTokenizerTest, BlankOrControlOnlyTextIsJustTheSpecialTokens) {
  const auto bert = Bert();
  EXPECT_EQ(Encode(*bert, " \t\n"), "[CLS]@0-0 [SEP]@0-0");
  EXPECT_EQ(Encode(*bert, std::string("\0\x01", 2)), "[CLS]@0-0 [SEP]@0-0");
}

TEST(PipelineTokenizerTest, ReportsVocabularyAndSpecialTokens) {
  const auto bert = Bert();
  EXPECT_EQ(bert->kind(), "wordpiece");
  EXPECT_EQ(bert->vocab_size(), 21u);
  EXPECT_EQ(bert->TokenToId("[SEP]"), 3);
  EXPECT_EQ(bert->IdToToken(5), "hello");
  std::vector<std::string> specials;
  for (const SpecialToken& t : bert->special_tokens()) {
    specials.push_back(absl::StrCat(t.content, "=", t.id));
  }
  EXPECT_EQ(specials, (std::vector<std::string>{"[PAD]=0", "[UNK]=1", "[CLS]=2",
                                                "[SEP]=3", "[MASK]=4"}));
}

TEST(PipelineTokenizerTest, OneTokenizerEncodesFromManyThreadsAtOnce) {
  const auto bert = Bert();
  const std::vector<std::string> texts = {
      "Hello, WORLD!", "the cat sat on the mat", "unaffable cafe",
      "the [MASK] sat", "\xE4\xB8\xAD\xE6\x96\x87 and emoji \xF0\x9F\x98\x80"};
  std::vector<std::string> expected;
  for (const auto& text : texts) expected.push_back(Encode(*bert, text));
  std::vector<int> mismatches(8, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const size_t k = static_cast<size_t>(i + t) % texts.size();
        if (Encode(*bert, texts[k]) != expected[k]) ++mismatches[t];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(mismatches, std::vector<int>(8, 0));
}

// Inputs that a quadratic step would turn into hours finish in well under
// the generous bound (each takes milliseconds when linear).
TEST(PipelineTokenizerTest, HostileTextsStayLinear) {
  const auto bert = Bert();
  std::string emoji;
  for (int i = 0; i < 1000000; ++i) emoji += "\xF0\x9F\x98\x80";
  std::string marks;
  for (int i = 0; i < 1000000; ++i) marks += "\xCC\x81\xCC\xA3";
  const std::vector<std::pair<std::string, size_t>> cases = {
      {emoji, 3},                                    // one 1M-char word
      {std::string(1000000, 'a'), 3},                // one 1M-byte word
      {std::string(3000000, ' ') + "cat", 3},        // a whitespace run
      {std::string(1000000, '!'), 1000002},          // a punctuation run
      {"a" + marks, 3},                              // 2M combining marks
      {std::string(300000, '[') + "MASK]", 300002},  // near-misses
  };
  for (const auto& [text, tokens] : cases) {
    const absl::Time start = absl::Now();
    const auto encoding = bert->Encode(text);
    ASSERT_TRUE(encoding.ok()) << encoding.status();
    EXPECT_EQ(encoding->size(), tokens) << text.substr(0, 20);
    EXPECT_LT(absl::Now() - start, absl::Seconds(20)) << text.substr(0, 20);
  }
}

}  // namespace
}  // namespace favor::tokenizer
