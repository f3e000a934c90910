// LoadModelTokenizer (model_tokenizer.h): the file config.json names, read
// from the model's folder with the options the config gives a vocab.txt.
#include "server/model/model_tokenizer.h"

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/model/model_config_test_util.h"
#include "tests/model/temp_dir_test.h"

namespace favor::model {
namespace {

using ::testing::HasSubstr;

constexpr char kVocab[] =
    "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nHello\ncafe\ncaf\xC3\xA9\n";

class ModelTokenizerTest : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    std::ofstream(dir_ + "/vocab.txt") << kVocab;
  }

  // The ids of "Hello café" under `tokenizer` (a config.json fragment).
  std::vector<int32_t> IdsWith(const std::string& tokenizer) {
    const auto config =
        Parse(R"({"vocab_size": 64, "tokenizer": )" + tokenizer + "}");
    EXPECT_TRUE(config.ok()) << config.status();
    const auto loaded = LoadModelTokenizer(dir_, *config);
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    if (!loaded.ok() || *loaded == nullptr) return {};
    return (*loaded)->Encode("Hello caf\xC3\xA9")->ids;
  }
};

TEST_F(ModelTokenizerTest, NoFileIsNoTokenizer) {
  const auto loaded = LoadModelTokenizer(dir_, ModelConfig());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(*loaded, nullptr);
}

TEST_F(ModelTokenizerTest, VocabTxtTakesItsOptionsFromTheConfig) {
  // BERT-base-uncased's defaults: lowercase, accents stripped.
  EXPECT_EQ(IdsWith(R"({"file": "vocab.txt"})"),
            (std::vector<int32_t>{2, 5, 7, 3}));
  EXPECT_EQ(IdsWith(R"({"file": "vocab.txt", "lowercase": false})"),
            (std::vector<int32_t>{2, 6, 8, 3}));
  EXPECT_EQ(IdsWith(R"({"file": "vocab.txt", "strip_accents": "keep"})"),
            (std::vector<int32_t>{2, 5, 8, 3}));
}

TEST_F(ModelTokenizerTest, MissingOrBrokenFilesNameThePath) {
  ModelConfig config;
  config.tokenizer.file = "tokenizer.json";
  auto missing = LoadModelTokenizer(dir_, config);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr(dir_ + "/tokenizer.json"));
  std::ofstream(dir_ + "/tokenizer.json") << "{\"model\": ";
  auto broken = LoadModelTokenizer(dir_, config);
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(broken.status().message(), HasSubstr(dir_ + "/tokenizer.json"));
  config.tokenizer.file = "vocab.txt";
  config.tokenizer.unk_token = "<unk>";
  auto no_unk = LoadModelTokenizer(dir_, config);
  EXPECT_EQ(no_unk.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_unk.status().message(), HasSubstr("<unk>"));
}

TEST_F(ModelTokenizerTest, RefusesIdsTheModelCannotRead) {
  ModelConfig config;
  config.vocab_size = 8;  // the vocabulary has 9 pieces
  config.tokenizer.file = "vocab.txt";
  auto loaded = LoadModelTokenizer(dir_, config);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(loaded.status().message(),
              HasSubstr("the tokenizer has 9 token ids, more than the "
                        "model's vocab_size (8)"));
}

// kVocab's line numbers are the ids: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3,
// [MASK] 4.
TEST_F(ModelTokenizerTest, SpecialTokenIdsLeftUnsetAreTheTokenizers) {
  ModelConfig config;
  config.vocab_size = 64;
  config.tokenizer.file = "vocab.txt";
  auto loaded = LoadModelTokenizer(dir_, config);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ModelConfig adopted = config;
  ASSERT_TRUE(AdoptSpecialTokenIds(**loaded, &adopted).ok());
  EXPECT_EQ(adopted.pad_token_id, 0);
  EXPECT_EQ(adopted.unk_token_id, 1);
  EXPECT_EQ(adopted.cls_token_id, 2);
  EXPECT_EQ(adopted.sep_token_id, 3);
  EXPECT_EQ(adopted.mask_token_id, 4);
  // A spelling the vocabulary lacks stays none; ids the config names that
  // agree with the tokenizer are kept.
  adopted = config;
  adopted.tokenizer.mask_token = "<mask>";
  adopted.cls_token_id = 2;
  ASSERT_TRUE(AdoptSpecialTokenIds(**loaded, &adopted).ok());
  EXPECT_EQ(adopted.mask_token_id, -1);
  EXPECT_EQ(adopted.cls_token_id, 2);
  // An id that contradicts the tokenizer's framing is refused.
  for (const bool cls : {true, false}) {
    adopted = config;
    (cls ? adopted.cls_token_id : adopted.sep_token_id) = 5;
    const absl::Status refused = AdoptSpecialTokenIds(**loaded, &adopted);
    EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(refused.message(),
                HasSubstr(cls ? "cls_token_id is 5, but the tokenizer frames "
                                "every text with [CLS] = 2"
                              : "sep_token_id is 5, but the tokenizer frames "
                                "every text with [SEP] = 3"));
  }
}

TEST_F(ModelTokenizerTest, SpecOfEachFileType) {
  TokenizerConfig config;
  config.file = "spiece.model";
  config.add_eos = true;
  auto spec = TokenizerSpecOf("/m", config);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->format, tokenizer::TokenizerFormat::kSentencePiece);
  EXPECT_EQ(spec->path, "/m/spiece.model");
  EXPECT_TRUE(spec->sentencepiece.add_eos);
  config.file = "tokenizer.json";
  EXPECT_EQ(TokenizerSpecOf("/m", config)->format,
            tokenizer::TokenizerFormat::kTokenizerJson);
  config.file = "";
  EXPECT_FALSE(TokenizerSpecOf("/m", config).ok());
}

}  // namespace
}  // namespace favor::model
