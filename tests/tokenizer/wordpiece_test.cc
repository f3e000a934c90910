#include "server/tokenizer/wordpiece.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::tokenizer {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<WordPiece> Make(std::vector<std::string> pieces,
                                WordPiece::Options options = {}) {
  auto model = WordPiece::Create(std::move(pieces), options);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

// Tokens as "piece@begin-end".
std::vector<std::string> Tokenize(const WordPiece& model,
                                  absl::string_view word) {
  std::vector<ModelToken> tokens;
  model.Tokenize(word, &tokens);
  std::vector<std::string> out;
  for (const ModelToken& t : tokens) {
    out.push_back(std::string(model.IdToToken(t.id)) + "@" +
                  std::to_string(t.begin) + "-" + std::to_string(t.end));
  }
  return out;
}

const std::vector<std::string> kVocab = {"[UNK]", "un",  "##aff", "##able",
                                         "a",     "##a", "aff",   "##\xC3\xA9",
                                         "caf",   "##f", "##ff",  "##fe"};

TEST(WordPieceTest, GreedyLongestMatchWithByteRanges) {
  const auto model = Make(kVocab);
  EXPECT_EQ(Tokenize(*model, "unaffable"),
            (std::vector<std::string>{"un@0-2", "##aff@2-5", "##able@5-9"}));
  EXPECT_EQ(Tokenize(*model, "caff"),
            (std::vector<std::string>{"caf@0-3", "##f@3-4"}));
  EXPECT_EQ(Tokenize(*model, "caf\xC3\xA9"),
            (std::vector<std::string>{"caf@0-3", "##\xC3\xA9@3-5"}));
}

TEST(WordPieceTest, UnknownRemainderMakesTheWholeWordUnknown) {
  const auto model = Make(kVocab);
  EXPECT_EQ(Tokenize(*model, "unx"), (std::vector<std::string>{"[UNK]@0-3"}));
  EXPECT_EQ(Tokenize(*model, "\xE4\xB8\xAD"),
            (std::vector<std::string>{"[UNK]@0-3"}));
}

TEST(WordPieceTest, WordsOverTheCharacterLimitAreUnknown) {
  WordPiece::Options options;
  options.max_input_chars_per_word = 4;
  const auto model = Make(kVocab, options);
  EXPECT_EQ(Tokenize(*model, "aaaa").size(), 4u);
  EXPECT_EQ(Tokenize(*model, "aaaaa"), (std::vector<std::string>{"[UNK]@0-5"}));
  // Characters, not bytes: four two-byte characters are within the limit.
  EXPECT_EQ(Tokenize(*model, "a\xC3\xA9\xC3\xA9\xC3\xA9").size(), 4u);
}

TEST(WordPieceTest, TenThousandCharacterWordIsOneUnknown) {
  const auto model = Make(kVocab);
  const std::string word(10000, 'a');
  EXPECT_EQ(Tokenize(*model, word),
            (std::vector<std::string>{"[UNK]@0-10000"}));
}

TEST(WordPieceTest, EmptyPrefixLooksUpLaterPiecesAsWholePieces) {
  WordPiece::Options options;
  options.continuing_subword_prefix = "";
  const auto model = Make({"[UNK]", "ab", "c"}, options);
  EXPECT_EQ(Tokenize(*model, "abc"),
            (std::vector<std::string>{"ab@0-2", "c@2-3"}));
}

TEST(WordPieceTest, LookupsBothWays) {
  const auto model = Make(kVocab);
  EXPECT_EQ(model->vocab_size(), kVocab.size());
  EXPECT_EQ(model->TokenToId("##able"), 3);
  EXPECT_EQ(model->TokenToId("nope"), std::nullopt);
  EXPECT_EQ(model->IdToToken(1), "un");
  EXPECT_EQ(model->IdToToken(-1), "");
  EXPECT_EQ(model->IdToToken(1000), "");
}

TEST(WordPieceTest, CreateRefusesBadVocabularies) {
  EXPECT_THAT(WordPiece::Create({"a", "b"}, {}).status().message(),
              HasSubstr("unk_token \"[UNK]\" is not in the vocabulary"));
  EXPECT_EQ(WordPiece::Create({}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  WordPiece::Options zero;
  zero.max_input_chars_per_word = 0;
  EXPECT_THAT(WordPiece::Create({"[UNK]"}, zero).status().message(),
              HasSubstr("max_input_chars_per_word 0"));
}

}  // namespace
}  // namespace favor::tokenizer
