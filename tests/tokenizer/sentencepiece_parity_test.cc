// SentencePiece parity: Favor's SentencePiece tokenizer against Debian's
// python3-sentencepiece, on unigram and BPE models that make_references.sh
// trains with spm_train: identical ids, pieces and byte spans over
// corpus.txt. Also: a truncated model never crashes the loader.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "gmock/gmock.h"
#include "server/tokenizer/load_tokenizer.h"
#include "server/tokenizer/sentencepiece_model.h"
#include "tests/tokenizer/corpus.h"

namespace favor::tokenizer {
namespace {

using nlohmann::json;

const std::string kReferences = FAVOR_TOKENIZER_REFERENCES;
const std::string kCorpora = FAVOR_TOKENIZER_CORPORA;

class SentencePieceParityTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::string ModelPath() const {
    return absl::StrCat(kReferences, "/spm/", GetParam(), ".model");
  }
  // The parameter's model, as a model folder names it.
  TokenizerSpec Spec() const {
    TokenizerSpec spec;
    spec.format = TokenizerFormat::kSentencePiece;
    spec.path = ModelPath();
    return spec;
  }
};

TEST_P(SentencePieceParityTest, MatchesPythonSentencePiece) {
  auto tokenizer = LoadTokenizer(Spec());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const auto corpus = testing::ReadCorpus(kCorpora + "/corpus.txt");
  const auto references = testing::ReadJsonLines(
      absl::StrCat(kReferences, "/spm/", GetParam(), "_reference.jsonl"));
  ASSERT_EQ(corpus.size(), references.size());
  size_t differences = 0;
  for (size_t i = 0; i < corpus.size(); ++i) {
    const auto encoding = (*tokenizer)->Encode(corpus[i]);
    ASSERT_TRUE(encoding.ok()) << encoding.status();
    json offsets = json::array();
    for (const TokenSpan& span : encoding->spans) {
      offsets.push_back({span.begin, span.end});
    }
    const json ours = {
        {"ids", encoding->ids},
        {"pieces", std::vector<std::string>(encoding->tokens.begin(),
                                            encoding->tokens.end())},
        {"offsets", offsets}};
    if (ours != references[i] && ++differences <= 5) {
      ADD_FAILURE() << "string " << i << " " << json(corpus[i]).dump()
                    << "\n  favor:  " << ours.dump().substr(0, 400)
                    << "\n  python: " << references[i].dump().substr(0, 400);
    }
  }
  EXPECT_EQ(differences, 0u);
}

TEST_P(SentencePieceParityTest, BosAndEosFrameTheTextWithEmptySpans) {
  TokenizerSpec spec = Spec();
  spec.sentencepiece.add_bos = true;
  spec.sentencepiece.add_eos = true;
  auto tokenizer = LoadTokenizer(spec);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const auto encoding = (*tokenizer)->Encode("the quick fox");
  ASSERT_TRUE(encoding.ok());
  EXPECT_EQ(encoding->tokens.front(), "<s>");
  EXPECT_EQ(encoding->tokens.back(), "</s>");
  EXPECT_EQ(encoding->spans.front(), (TokenSpan{0, 0}));
  EXPECT_EQ(encoding->special_tokens_mask.back(), 1);
  EXPECT_EQ((*tokenizer)->kind(), "sentencepiece");
}

TEST_P(SentencePieceParityTest, TruncatedModelsNeverCrash) {
  std::ifstream file(ModelPath(), std::ios::binary);
  std::stringstream bytes;
  bytes << file.rdbuf();
  const std::string model = bytes.str();
  ASSERT_GT(model.size(), 1000u);
  TokenizerSpec spec;
  spec.format = TokenizerFormat::kSentencePiece;
  spec.path = absl::StrCat(::testing::TempDir(), "/cut_", GetParam(), ".model");
  for (size_t size = 0; size < model.size(); size += model.size() / 97 + 1) {
    std::ofstream(spec.path, std::ios::binary) << model.substr(0, size);
    auto tokenizer = LoadTokenizer(spec);
    // A cut at a field boundary may still be a (smaller) model; either way
    // it loads or is refused, and what loads encodes.
    if (tokenizer.ok()) {
      EXPECT_TRUE((*tokenizer)->Encode("the quick fox").ok());
    } else {
      EXPECT_EQ(tokenizer.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
}

// libsentencepiece's time is quadratic in a run of characters the model
// lacks (it merges their unknown pieces by copying), so such runs are
// bounded; known text of any length is not. U+E000 (private use) is in no
// model; "a" and " " are in both.
TEST_P(SentencePieceParityTest, LongRunsOfUnknownCharactersAreRefused) {
  auto tokenizer = LoadTokenizer(Spec());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const auto repeat = [](const std::string& text, size_t times) {
    std::string out;
    for (size_t i = 0; i < times; ++i) out.append(text);
    return out;
  };
  const std::string kUnknown = "\xEE\x80\x80";  // U+E000, 3 bytes
  const size_t most = kMaxUnknownRunBytes / 3;    // 65,535 bytes
  for (const std::string& text :
       {repeat(kUnknown, most), repeat(kUnknown + "a", 3 * most),
        repeat(kUnknown + " ", 3 * most),
        absl::StrCat("a", repeat(kUnknown, most), "a"),
        repeat("the quick brown fox ", 100000)}) {
    const auto encoding = (*tokenizer)->Encode(text);
    EXPECT_TRUE(encoding.ok()) << text.size() << ": " << encoding.status();
  }
  const auto refused = [&](const std::string& text, size_t from) {
    const auto encoding = (*tokenizer)->Encode(text);
    EXPECT_EQ(encoding.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(encoding.status().message()),
                ::testing::HasSubstr(absl::StrCat(
                    "text has over 65536 bytes in a row (from byte ", from,
                    ") of characters the SentencePiece model lacks")));
  };
  refused(repeat(kUnknown, most + 1), 0);
  refused(absl::StrCat("a a", repeat(kUnknown, most + 1)), 3);
  // A character that combining marks follow joins the run, known or not
  // (the normaliser may compose them into one the model lacks): "a" and
  // U+0301 (known to both models) a million times would take 26 s.
  refused(absl::StrCat("a a", repeat("\xCC\x81", 40000)), 2);
}

INSTANTIATE_TEST_SUITE_P(Models, SentencePieceParityTest,
                         ::testing::Values("unigram", "bpe"));

}  // namespace
}  // namespace favor::tokenizer
