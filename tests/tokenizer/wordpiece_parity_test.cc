// WordPiece parity with Hugging Face on BERT-base-uncased's vocabulary over
// corpus.txt (make_references.sh builds the references): identical ids,
// tokens and byte spans to the Rust crate (npm tokenizers), identical ids to
// the pure-JavaScript tokenizers (npm @huggingface/tokenizers), and the
// vocab.txt path identical to the tokenizer.json path.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "server/tokenizer/load_tokenizer.h"
#include "tests/tokenizer/corpus.h"

namespace favor::tokenizer {
namespace {

using nlohmann::json;

const std::string kReferences = FAVOR_TOKENIZER_REFERENCES;
const std::string kCorpora = FAVOR_TOKENIZER_CORPORA;

std::unique_ptr<Tokenizer> Load(TokenizerFormat format, const char* file) {
  TokenizerSpec spec;
  spec.format = format;
  spec.path = absl::StrCat(kReferences, "/bert-base-uncased/", file);
  auto tokenizer = LoadTokenizer(spec);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  return tokenizer.ok() ? *std::move(tokenizer) : nullptr;
}

// Favor's encoding in the reference's shape.
json AsJson(const Encoding& encoding) {
  json offsets = json::array();
  for (const TokenSpan& span : encoding.spans) {
    offsets.push_back({span.begin, span.end});
  }
  std::vector<std::string> tokens(encoding.tokens.begin(),
                                  encoding.tokens.end());
  return {{"ids", encoding.ids}, {"tokens", tokens}, {"offsets", offsets}};
}

// Compares Favor with the Rust crate on every string; returns the
// differences (at most `max_reported` described).
std::vector<std::string> CompareWithRust(const Tokenizer& tokenizer,
                                         const std::vector<std::string>& corpus,
                                         const std::vector<json>& references) {
  std::vector<std::string> differences;
  for (size_t i = 0; i < corpus.size(); ++i) {
    const auto encoding = tokenizer.Encode(corpus[i]);
    if (!encoding.ok()) {
      differences.push_back(
          absl::StrCat("line ", i, ": ", encoding.status().ToString()));
      continue;
    }
    json ours = AsJson(*encoding);
    json theirs = {{"ids", references[i]["ids"]},
                   {"tokens", references[i]["tokens"]},
                   {"offsets", references[i]["offsets"]}};
    if (ours != theirs) {
      differences.push_back(
          absl::StrCat("string ", i, " ", json(corpus[i]).dump().substr(0, 120),
                       "\n  favor: ", ours.dump().substr(0, 400),
                       "\n  hf:    ", theirs.dump().substr(0, 400)));
    }
  }
  return differences;
}

std::string FirstFew(const std::vector<std::string>& differences) {
  const size_t n = std::min<size_t>(differences.size(), 8);
  return absl::StrJoin(differences.begin(), differences.begin() + n, "\n");
}

TEST(WordPieceParityTest, CorpusIsLargeAndCoversEveryKind) {
  const auto corpus = testing::ReadCorpus(kCorpora + "/corpus.txt");
  EXPECT_GE(corpus.size(), 1000u);
  std::ifstream file(kCorpora + "/corpus.txt");
  std::string text((std::istreambuf_iterator<char>(file)), {});
  for (const char* kind :
       {"prose", "languages", "urls", "special tokens", "casing", "long words",
        "emoji", "controls", "whitespace", "punctuation", "combining marks",
        "random"}) {
    EXPECT_NE(text.find(absl::StrCat("# kind: ", kind)), std::string::npos)
        << kind;
  }
}

TEST(WordPieceParityTest, TokenizerJsonMatchesHuggingFace) {
  const auto corpus = testing::ReadCorpus(kCorpora + "/corpus.txt");
  const auto references =
      testing::ReadJsonLines(kReferences + "/wordpiece_reference.jsonl");
  ASSERT_EQ(corpus.size(), references.size());
  const auto tokenizer =
      Load(TokenizerFormat::kTokenizerJson, "tokenizer.json");
  ASSERT_NE(tokenizer, nullptr);
  const auto differences = CompareWithRust(*tokenizer, corpus, references);
  EXPECT_TRUE(differences.empty())
      << differences.size() << " of " << corpus.size() << " differ:\n"
      << FirstFew(differences);
  size_t javascript_differs = 0;
  for (const json& reference : references) {
    if (reference["js_ids"] != reference["ids"]) ++javascript_differs;
  }
  EXPECT_EQ(javascript_differs, 0u)
      << "the two Hugging Face implementations disagree on corpus strings: "
         "move them to wordpiece_divergences.txt with the reason";
}

TEST(WordPieceParityTest, VocabTxtMatchesTokenizerJson) {
  const auto corpus = testing::ReadCorpus(kCorpora + "/corpus.txt");
  const auto from_json =
      Load(TokenizerFormat::kTokenizerJson, "tokenizer.json");
  const auto from_vocab = Load(TokenizerFormat::kVocabTxt, "vocab.txt");
  ASSERT_NE(from_json, nullptr);
  ASSERT_NE(from_vocab, nullptr);
  size_t differences = 0;
  for (const std::string& text : corpus) {
    const auto a = from_json->Encode(text);
    const auto b = from_vocab->Encode(text);
    ASSERT_TRUE(a.ok() && b.ok());
    if (AsJson(*a) != AsJson(*b)) ++differences;
  }
  EXPECT_EQ(differences, 0u);
  EXPECT_EQ(from_vocab->vocab_size(), 30522u);
}

TEST(WordPieceParityTest, WhereHuggingFacesImplementationsDifferFavorIsRust) {
  const auto strings =
      testing::ReadCorpus(kCorpora + "/wordpiece_divergences.txt");
  const auto references =
      testing::ReadJsonLines(kReferences + "/wordpiece_divergences.jsonl");
  ASSERT_EQ(strings.size(), references.size());
  ASSERT_FALSE(strings.empty());
  for (size_t i = 0; i < strings.size(); ++i) {
    EXPECT_NE(references[i]["js_ids"], references[i]["ids"])
        << "no longer a divergence: " << json(strings[i]).dump();
  }
  const auto tokenizer =
      Load(TokenizerFormat::kTokenizerJson, "tokenizer.json");
  ASSERT_NE(tokenizer, nullptr);
  const auto differences = CompareWithRust(*tokenizer, strings, references);
  EXPECT_TRUE(differences.empty()) << FirstFew(differences);
}

}  // namespace
}  // namespace favor::tokenizer
