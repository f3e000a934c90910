#include "server/tokenizer/load_tokenizer.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace favor::tokenizer {
namespace {

using ::testing::HasSubstr;

// A small tokenizer.json as BertTokenizerFast writes one; REPLACE_ME marks
// where tests splice in hostile values.
constexpr char kTokenizerJson[] = R"({
  "version": "1.0", "truncation": null, "padding": null,
  "added_tokens": [
    {"id": 0, "content": "[PAD]", "single_word": false, "lstrip": false,
     "rstrip": false, "normalized": false, "special": true},
    {"id": 1, "content": "[UNK]", "single_word": false, "lstrip": false,
     "rstrip": false, "normalized": false, "special": true},
    {"id": 2, "content": "[CLS]", "single_word": false, "lstrip": false,
     "rstrip": false, "normalized": false, "special": true},
    {"id": 3, "content": "[SEP]", "single_word": false, "lstrip": false,
     "rstrip": false, "normalized": false, "special": true}],
  "normalizer": {"type": "BertNormalizer", "clean_text": true,
    "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
  "pre_tokenizer": {"type": "BertPreTokenizer"},
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
               {"Sequence": {"id": "A", "type_id": 0}},
               {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
    "pair": [],
    "special_tokens": {
      "[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
      "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
  "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
  "model": {"type": "WordPiece", "unk_token": "[UNK]",
    "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
    "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "hello": 4,
              "world": 5, "##s": 6}}
})";

// In a folder of the running test's own: ctest runs tests side by side, and
// TempDir() is shared.
std::string WriteFile(const std::string& name, const std::string& bytes) {
  const std::string folder = absl::StrCat(
      testing::TempDir(), "/",
      testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::create_directories(folder);
  const std::string path = absl::StrCat(folder, "/", name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadJson(const std::string& json) {
  TokenizerSpec spec;
  spec.format = TokenizerFormat::kTokenizerJson;
  spec.path = WriteFile("tokenizer.json", json);
  return LoadTokenizer(spec);
}

// kTokenizerJson with `from` replaced by `to` (which must occur).
std::string Edit(absl::string_view from, absl::string_view to) {
  const std::string json = kTokenizerJson;
  EXPECT_NE(json.find(std::string(from)), std::string::npos) << from;
  return absl::StrReplaceAll(json, {{from, to}});
}

TEST(LoadTokenizerTest, LoadsTokenizerJson) {
  auto tokenizer = LoadJson(kTokenizerJson);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const auto encoding = (*tokenizer)->Encode("Hello worlds [SEP]");
  ASSERT_TRUE(encoding.ok());
  EXPECT_EQ(encoding->ids, (std::vector<int32_t>{2, 4, 5, 6, 3, 3}));
  EXPECT_EQ(encoding->spans[4].begin, 13u);
  EXPECT_EQ(encoding->spans[4].end, 18u);
}

TEST(LoadTokenizerTest, BertProcessingIsTheSameTemplate) {
  nlohmann::json file = nlohmann::json::parse(kTokenizerJson);
  file["post_processor"] = nlohmann::json::parse(
      R"({"type": "BertProcessing", "cls": ["[CLS]", 2], "sep": ["[SEP]", 3]})");
  const std::string json = file.dump();
  auto tokenizer = LoadJson(json);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  EXPECT_EQ((*tokenizer)->Encode("hello")->ids,
            (std::vector<int32_t>{2, 4, 3}));
}

// The spans of `text`'s tokens (without [CLS] and [SEP]) with `pre_tokenizer`
// in place of BertPreTokenizer: with WordPiece, a word not in the
// vocabulary is one [UNK] spanning the word, so the spans are the words.
std::vector<std::pair<size_t, size_t>> WordSpans(const std::string& stage,
                                                 const std::string& text) {
  nlohmann::json file = nlohmann::json::parse(kTokenizerJson);
  file["pre_tokenizer"] = nlohmann::json::parse(stage);
  auto tokenizer = LoadJson(file.dump());
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  if (!tokenizer.ok()) return {};
  EncodeOptions options;
  options.add_special_tokens = false;
  const auto encoding = (*tokenizer)->Encode(text, options);
  EXPECT_TRUE(encoding.ok()) << encoding.status();
  std::vector<std::pair<size_t, size_t>> spans;
  for (const TokenSpan& span : encoding->spans) {
    spans.push_back({span.begin, span.end});
  }
  return spans;
}

std::string SplitStage(const std::string& behavior, bool regex = false) {
  return absl::StrCat(R"({"type": "Split", "pattern": {")",
                      regex ? "Regex\": \"-+\"" : "String\": \"-\"",
                      R"(}, "behavior": ")", behavior,
                      R"(", "invert": false})");
}

// Each behavior as the file names it reaches the pre-tokenizer.
TEST(LoadTokenizerTest, SplitBehaviorsAsNamed) {
  using Spans = std::vector<std::pair<size_t, size_t>>;
  const std::string text = "hello-world--hello";
  EXPECT_EQ(WordSpans(SplitStage("Removed"), text),
            (Spans{{0, 5}, {6, 11}, {13, 18}}));
  EXPECT_EQ(WordSpans(SplitStage("Isolated"), text),
            (Spans{{0, 5}, {5, 6}, {6, 11}, {11, 12}, {12, 13}, {13, 18}}));
  EXPECT_EQ(WordSpans(SplitStage("MergedWithPrevious"), text),
            (Spans{{0, 6}, {6, 12}, {12, 13}, {13, 18}}));
  EXPECT_EQ(WordSpans(SplitStage("MergedWithNext"), text),
            (Spans{{0, 5}, {5, 11}, {11, 12}, {12, 18}}));
  EXPECT_EQ(WordSpans(SplitStage("Contiguous"), text),
            (Spans{{0, 5}, {5, 6}, {6, 11}, {11, 13}, {13, 18}}));
  EXPECT_EQ(WordSpans(SplitStage("Isolated", /*regex=*/true), text),
            (Spans{{0, 5}, {5, 6}, {6, 11}, {11, 13}, {13, 18}}));
}

// A Regex Replace in the normalizer: offsets still point into the input.
TEST(LoadTokenizerTest, RegexReplaceKeepsInputOffsets) {
  nlohmann::json file = nlohmann::json::parse(kTokenizerJson);
  file["normalizer"] = nlohmann::json::parse(
      R"({"type": "Replace", "pattern": {"Regex": "-{2,}"}, "content": " "})");
  auto tokenizer = LoadJson(file.dump());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const auto encoding = (*tokenizer)->Encode("hello---world");
  ASSERT_TRUE(encoding.ok());
  EXPECT_EQ(encoding->ids, (std::vector<int32_t>{2, 4, 5, 3}));
  EXPECT_EQ(encoding->spans[2].begin, 8u);
  EXPECT_EQ(encoding->spans[2].end, 13u);
}

TEST(LoadTokenizerTest, BadPatternsAndSplitFieldsAreRefusedByName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"type": "Split", "pattern": {"Regex": "(a"}, "behavior": "Removed",
          "invert": false})",
       "Regex pattern \"(a\" does not compile: missing closing parenthesis"},
      {R"({"type": "Split", "pattern": {"String": "-"}, "behavior": "Merged",
          "invert": false})",
       "behavior 'Merged' is not one of"},
      {R"({"type": "Split", "pattern": {"String": "-"}, "behavior": "Removed"})",
       "\"behavior\" and \"invert\" are required"},
      {R"({"type": "Split", "pattern": {"Glob": "-"}, "behavior": "Removed",
          "invert": false})",
       "\"pattern\" must be"},
  };
  for (const auto& [stage, message] : cases) {
    nlohmann::json file = nlohmann::json::parse(kTokenizerJson);
    file["pre_tokenizer"] = nlohmann::json::parse(stage);
    const absl::Status status = LoadJson(file.dump()).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()), HasSubstr(message));
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("pre_tokenizer (Split)"));
  }
}

TEST(LoadTokenizerTest, MissingFileIsNotFound) {
  TokenizerSpec spec;
  spec.path = "/nonexistent/tokenizer.json";
  EXPECT_EQ(LoadTokenizer(spec).status().code(), absl::StatusCode::kNotFound);
}

TEST(LoadTokenizerTest, DirectoriesAndOversizedFilesAreRefusedUnread) {
  TokenizerSpec spec;
  spec.path = testing::TempDir();
  EXPECT_THAT(LoadTokenizer(spec).status().message(),
              HasSubstr("not a regular file"));
  spec.path = WriteFile("big.json", kTokenizerJson);
  spec.max_file_bytes = 100;
  const absl::Status status = LoadTokenizer(spec).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("over 100 bytes"));
}

TEST(LoadTokenizerTest, HostileTokenizerJsonIsAnErrorNamingTheProblem) {
  struct Case {
    std::string json;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"[1, 2]", "must be a JSON object"},
      {"{\"model\": ", "not valid JSON"},
      {std::string(100000, '[') + std::string(100000, ']'), "nested deeper"},
      {Edit(R"("world": 5,)", R"("world": "5",)"), "got string"},
      {Edit(R"("world": 5,)", R"("world": -5,)"), "got number -5"},
      {Edit(R"("world": 5,)", R"("world": 1e30,)"), "must be an integer"},
      {Edit(R"("world": 5,)", R"("world": 99999999999999999999999,)"),
       "must be an integer"},
      {Edit(R"("world": 5,)", R"("world": 4,)"), "used twice"},
      {Edit(R"("world": 5,)", R"("world": 7,)"),
       "must be an integer in [0, 6]"},
      {Edit(R"("unk_token": "[UNK]")", R"("unk_token": "<unk>")"),
       "not in the vocabulary"},
      // A special token past the vocabulary (tests/fuzz/tokenizer_fuzz
      // makes them).
      {Edit(R"("ids": [3])", R"("ids": [8])"),
       "special token \"[SEP]\" has id 8, outside the vocabulary (7 ids)"},
      {Edit(R"("max_input_chars_per_word": 100)",
            R"("max_input_chars_per_word": 18446744073709551615)"),
       "max_input_chars_per_word"},
      {Edit(R"("type": "WordPiece", "unk)", R"("type": "WordLevel", "unk)"),
       "model: type \"WordLevel\" is not supported"},
      {Edit(R"("type": "BertNormalizer")", R"("type": "Nmt")"),
       "normalizer: type \"Nmt\" is not supported"},
      {Edit(R"("type": "BertNormalizer")", R"("type": "NFKC")"),
       "normalizer (NFKC): field 'clean_text' is not supported"},
      {Edit(R"("type": "WordPiece", "unk)",
            R"("type": "WordPiece", "dropout": 0.1, "unk)"),
       "model (WordPiece): field 'dropout' is not supported"},
      {Edit(R"("strip_accents": null)", R"("strip_accents": "yes")"),
       "\"strip_accents\" must be a boolean"},
      {Edit(R"("type": "BertPreTokenizer")", R"("type": "UnicodeScripts")"),
       "pre_tokenizer: type \"UnicodeScripts\" is not supported"},
      {Edit(R"("type": "BertPreTokenizer")", R"("type": "ByteLevel")"),
       "a ByteLevel pre-tokenizer is supported only before a BPE model"},
      {Edit(R"({"Sequence": {"id": "A", "type_id": 0}},)", ""),
       "the sequence ($A) exactly once"},
      {Edit(R"("ids": [2])", R"("ids": [2, 3])"), "of one length"},
      {Edit(R"("ids": [2])", R"("ids": [-2])"), "must be an integer"},
      {Edit(R"("single_word": false)", R"("single_word": true)"),
       "\"single_word\": true is not supported (only false)"},
      {Edit(R"({"id": 0, "content": "[PAD]")", R"({"id": 0, "content": 5)"),
       "\"content\" must be a string"},
      {R"({"model": 3})", "\"model\" must be an object"},
      {Edit(R"("model": {)", R"("extra": 1, "model": {)"),
       "field 'extra' is not supported"},
      {Edit(R"("hello": 4)", "\"hello\": 4, \"hello\": 4"), "duplicate key"},
      // Favor embeds every token with type 0; transformers would not.
      {Edit(R"({"Sequence": {"id": "A", "type_id": 0}})",
            R"({"Sequence": {"id": "A", "type_id": 1}})"),
       "\"single\" gives type_id number 1; only 0 is supported"},
      {Edit(R"({"SpecialToken": {"id": "[SEP]", "type_id": 0}})",
            R"({"SpecialToken": {"id": "[SEP]", "type_id": "0"}})"),
       "gives type_id string '0'"},
  };
  for (const Case& c : cases) {
    const absl::Status status = LoadJson(c.json).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
        << c.json.substr(0, 200);
    EXPECT_THAT(status.message(), HasSubstr(c.message));
  }
}

TEST(LoadTokenizerTest, EveryTruncationOfAValidFileIsAnError) {
  const std::string json = kTokenizerJson;
  for (size_t size = 0; size + 1 < json.size(); ++size) {
    const auto loaded = LoadJson(json.substr(0, size));
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument)
        << "cut at " << size;
  }
}

TEST(LoadTokenizerTest, MoreIdsThanTheModelHasAreRefused) {
  TokenizerSpec spec;
  spec.format = TokenizerFormat::kVocabTxt;
  for (const char* vocab : {"[UNK]\n[CLS]\n[SEP]\nhello\nworld\n",
                            "[UNK]\n[CLS]\n[SEP]\nhello\nworld"}) {
    // Counted before the pieces are read: the invalid UTF-8 of the copy
    // goes unread.
    spec.path = WriteFile("vocab.txt", absl::StrCat(vocab, "\xFF"));
    spec.max_vocab_size = 4;
    EXPECT_THAT(LoadTokenizer(spec).status().message(),
                HasSubstr("token ids, more than the model's vocab_size (4)"))
        << vocab;
    spec.path = WriteFile("vocab.txt", vocab);
    spec.max_vocab_size = 5;
    EXPECT_TRUE(LoadTokenizer(spec).ok()) << vocab;
    spec.max_vocab_size = 4;
    const absl::Status status = LoadTokenizer(spec).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(),
                HasSubstr("vocab.txt: the tokenizer has 5 token ids, more "
                          "than the model's vocab_size (4)"));
  }
  spec.format = TokenizerFormat::kTokenizerJson;
  spec.path = WriteFile("tokenizer.json", kTokenizerJson);
  spec.max_vocab_size = 7;
  EXPECT_TRUE(LoadTokenizer(spec).ok());
  spec.max_vocab_size = 6;
  EXPECT_THAT(LoadTokenizer(spec).status().message(),
              HasSubstr("tokenizer.json: the tokenizer has 7 token ids, more "
                        "than the model's vocab_size (6)"));
}

// A tokenizer.json of far more ids than the model has is refused while it
// is parsed, so that a file near max_file_bytes cannot take gigabytes
// first: 1.1 million vocab entries, and the model's vocab_size 1 allows
// 32 + 2^20 JSON values.
TEST(LoadTokenizerTest, AHugeTokenizerJsonIsRefusedWhileItIsParsed) {
  ASSERT_EQ(MaxTokenizerJsonValues(1), 32u + (1u << 20));
  ASSERT_EQ(MaxTokenizerJsonValues(SIZE_MAX / 2), SIZE_MAX);
  constexpr int kEntries = 1100000;
  std::string vocab;
  for (int i = 7; i < kEntries; ++i)
    absl::StrAppend(&vocab, ", \"t", i, "\": ", i);
  const std::string json =
      Edit(R"("##s": 6)", absl::StrCat(R"("##s": 6)", vocab));
  TokenizerSpec spec;
  spec.path = WriteFile("tokenizer.json", json);
  spec.max_vocab_size = 1;
  const absl::Status status = LoadTokenizer(spec).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("tokenizer.json: more than 1048608 JSON values: far "
                        "more than a tokenizer for the model's vocab_size (1) "
                        "can need"));
  // Within the values a vocab_size of its ids allows, it loads.
  spec.max_vocab_size = kEntries;
  auto loaded = LoadTokenizer(spec);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->vocab_size(), size_t{kEntries});
}

TEST(LoadTokenizerTest, VocabTxtWithOptions) {
  TokenizerSpec spec;
  spec.format = TokenizerFormat::kVocabTxt;
  spec.path = WriteFile("vocab.txt",
                        "[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\nHello\r\nh\r\n"
                        "##ello\r\n");
  spec.vocab_txt.normalizer.lowercase = false;
  auto cased = LoadTokenizer(spec);
  ASSERT_TRUE(cased.ok()) << cased.status();
  EXPECT_EQ((*cased)->Encode("Hello")->ids, (std::vector<int32_t>{2, 4, 3}));
  spec.vocab_txt.normalizer.lowercase = true;
  auto uncased = LoadTokenizer(spec);
  ASSERT_TRUE(uncased.ok());
  EXPECT_EQ((*uncased)->Encode("Hello")->ids,
            (std::vector<int32_t>{2, 5, 6, 3}));
}

TEST(LoadTokenizerTest, BadVocabTxtIsAnError) {
  TokenizerSpec spec;
  spec.format = TokenizerFormat::kVocabTxt;
  spec.path = WriteFile("vocab.txt", "[UNK]\n[CLS]\nhello\n");
  EXPECT_THAT(LoadTokenizer(spec).status().message(),
              HasSubstr("\"[SEP]\" is not in the vocabulary"));
  spec.path = WriteFile("vocab.txt", "[CLS]\n[SEP]\nhello\n");
  EXPECT_THAT(LoadTokenizer(spec).status().message(),
              HasSubstr("\"[UNK]\" is not in the vocabulary"));
  spec.path = WriteFile("vocab.txt", "[UNK]\n[CLS]\n[SEP]\nbad\xFF\n");
  EXPECT_THAT(LoadTokenizer(spec).status().message(),
              HasSubstr("byte offset 21"));
}

TEST(LoadTokenizerTest, GarbageSentencePieceModelIsAnError) {
  TokenizerSpec spec;
  spec.format = TokenizerFormat::kSentencePiece;
  for (const std::string& bytes :
       {std::string(""), std::string("not a model"), std::string(1000, '\xFF'),
        std::string(kTokenizerJson)}) {
    spec.path = WriteFile("garbage.model", bytes);
    EXPECT_EQ(LoadTokenizer(spec).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

// A piece that starts with a NUL byte is a zero-length key to
// libsentencepiece's trie builder, which throws instead of failing the load
// (Debian's own spm_encode dies on this model); the load is an error.
TEST(LoadTokenizerTest, SentencePieceModelWithAnEmptyTrieKeyIsAnError) {
  static constexpr char kModel[] =
      "\x0a\x0e\x0a\x05\x3c\x75\x6e\x6b\x3e\x15\x00\x00\x00\x00\x18\x02"
      "\x0a\x0c\x0a\x03\x3c\x63\x6f\x15\x00\x00\x00\x00\x18\x03\x0a\x0d"
      "\x0a\x04\x2f\x3c\x73\x3e\x15\x00\x00\x00\x00\x18\x03\x0a\x0a\x0a"
      "\x03\x00\x5c\x81\x15\x31\x42\xd0\xbf\x0a\x08\x0a\x01\x6f\x15\xa2"
      "\x88\x1a\xc0\x0a\x08\x0a\x01\x6c\x15\x2d\x7f\x34\xc0\x0a\x09\x0a"
      "\x02\x68\x65\x15\xfd\xeb\x46\xc0\x0a\x08\x0a\x01\x72\x15\x82\xab"
      "\x86\xc0\x0a\x08\x0a\x01\x6d\x15\x82\xab\x86\xc0\x0a\x08\x0a\x01"
      "\x32\x15\xd1\x64\xcd\xc0\x88\x03\x00\x90\x03\x00\x9d\x03\x11\x00"
      "\x00\x00\xa0\x03\x01\x32\x00";
  TokenizerSpec spec;
  spec.format = TokenizerFormat::kSentencePiece;
  spec.path =
      WriteFile("nul_piece.model", std::string(kModel, sizeof(kModel) - 1));
  const absl::Status status = LoadTokenizer(spec).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("zero-length key"));
}

TEST(LoadTokenizerTest, FormatNames) {
  for (const TokenizerFormat format :
       {TokenizerFormat::kTokenizerJson, TokenizerFormat::kVocabTxt,
        TokenizerFormat::kSentencePiece}) {
    EXPECT_EQ(ParseTokenizerFormat(NameOf(format)).value(), format);
  }
  EXPECT_THAT(ParseTokenizerFormat("bpe").status().message(),
              HasSubstr("expected tokenizer.json, vocab.txt or sentencepiece"));
}

}  // namespace
}  // namespace favor::tokenizer
