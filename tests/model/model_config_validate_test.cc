// ValidateModelConfig (model_config_validate.cc), through ParseModelConfig,
// whose errors name the source as well.
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/model/model_config.h"
#include "tests/model/model_config_test_util.h"

namespace favor::model {
namespace {

TEST(ModelConfigTest, ValidatesSizes) {
  ExpectInvalid(R"({"hidden_size": 0})",
                {"field 'hidden_size' is 0; must be in [1, 65536]"});
  ExpectInvalid(R"({"hidden_size": 100, "num_attention_heads": 12})",
                {"field 'hidden_size' is 100; must be divisible by "
                 "num_attention_heads (12)"});
  ExpectInvalid(R"({"num_hidden_layers": -2})",
                {"field 'num_hidden_layers' is -2"});
  ExpectInvalid(R"({"num_attention_heads": 0})",
                {"field 'num_attention_heads' is 0"});
  ExpectInvalid(R"({"intermediate_size": 0})",
                {"field 'intermediate_size' is 0"});
  ExpectInvalid(R"({"vocab_size": 0})", {"field 'vocab_size' is 0"});
  ExpectInvalid(R"({"layer_norm_eps": 0})",
                {"field 'layer_norm_eps' is 0; must be finite and above 0"});
  ExpectInvalid(R"({"hidden_size": 8192, "num_attention_heads": 1})",
                {"head size limit 4096"});
  ExpectInvalid(R"({"version": ")" + std::string(300, 'v') + "\"}",
                {"field 'version' is 300 bytes long"});
}

TEST(ModelConfigTest, ValidatesSpecialTokenIds) {
  ExpectInvalid(R"({"vocab_size": 100, "cls_token_id": 100})",
                {"field 'cls_token_id' is 100; must be -1 (none) or below "
                 "vocab_size (100)"});
  ExpectInvalid(R"({"pad_token_id": -2})", {"field 'pad_token_id' is -2"});
  EXPECT_TRUE(Parse(R"({"vocab_size": 10, "pad_token_id": 9,
      "unk_token_id": -1, "cls_token_id": -1, "sep_token_id": -1,
      "mask_token_id": -1})")
                  .ok());
}

TEST(ModelConfigTest, LearnedPositionsBoundTheSequenceLength) {
  ExpectInvalid(R"({"max_position_embeddings": 512,
                    "max_sequence_length": 1024})",
                {"field 'max_position_embeddings' is 512; learned absolute "
                 "positions need at least max_sequence_length (1024) rows"});
  // The bound itself: one row short is refused, exactly enough is not.
  ExpectInvalid(R"({"max_position_embeddings": 1023,
                    "max_sequence_length": 1024})",
                {"field 'max_position_embeddings' is 1023"});
  EXPECT_TRUE(Parse(R"({"max_position_embeddings": 1024,
      "max_sequence_length": 1024})")
                  .ok());
  // Rotary and none accept any length.
  EXPECT_TRUE(Parse(R"({"position_embedding_type": "rotary",
      "max_position_embeddings": 512, "max_sequence_length": 1048576})")
                  .ok());
  EXPECT_TRUE(Parse(R"({"position_embedding_type": "none",
      "max_sequence_length": 1048576})")
                  .ok());
  ExpectInvalid(R"({"max_sequence_length": 0})",
                {"field 'max_sequence_length' is 0"});
}

TEST(ModelConfigTest, ValidatesLocalLayersAndTheFirstNorm) {
  EXPECT_TRUE(Parse(R"({"position_embedding_type": "rotary",
      "local_attention_window": 128, "global_attention_every_n_layers": 3,
      "local_rotary_base": 10000, "norm_placement": "pre",
      "first_layer_attention_norm": false})")
                  .ok());
  ExpectInvalid(R"({"local_attention_window": -1})",
                {"field 'local_attention_window' is -1"});
  ExpectInvalid(R"({"global_attention_every_n_layers": 0})",
                {"field 'global_attention_every_n_layers' is 0"});
  ExpectInvalid(R"({"local_attention_window": 8,
                    "attention": {"causal": true}})",
                {"field 'local_attention_window' is 8",
                 "without causal attention"});
  ExpectInvalid(R"({"position_embedding_type": "rotary",
                    "local_attention_window": 8, "local_rotary_base": 1})",
                {"local_rotary_base"});
  ExpectInvalid(R"({"first_layer_attention_norm": false})",
                {"first_layer_attention_norm", "norm_placement \"pre\""});
}

TEST(ModelConfigTest, PositionsAfterThePaddingIdStartPastIt) {
  // RoBERTa's numbering: rows 0 … pad_token_id are no token's, so 514 rows
  // with padding id 1 hold 512 tokens, and not 513.
  EXPECT_TRUE(Parse(R"({"position_ids": "after_padding", "pad_token_id": 1,
      "max_position_embeddings": 514, "max_sequence_length": 512})")
                  .ok());
  ExpectInvalid(R"({"position_ids": "after_padding", "pad_token_id": 1,
                    "max_position_embeddings": 514,
                    "max_sequence_length": 513})",
                {"field 'max_position_embeddings' is 514",
                 "past the first 2"});
  ExpectInvalid(R"({"position_ids": "after_padding", "pad_token_id": -1,
                    "max_position_embeddings": 514,
                    "max_sequence_length": 512})",
                {"field 'pad_token_id' is -1"});
}

TEST(ModelConfigTest, ValidatesRotary) {
  ExpectInvalid(R"({"position_embedding_type": "rotary", "hidden_size": 12,
                    "num_attention_heads": 4})",
                {"even head size"});
  ExpectInvalid(R"({"position_embedding_type": "rotary", "rotary_base": 1})",
                {"field 'rotary_base'"});
  ExpectInvalid(R"({"position_embedding_type": "rotary",
                    "block": "cross_attention", "num_latents": 8})",
                {"field 'position_embedding_type'", "cross_attention"});
}

TEST(ModelConfigTest, ValidatesAttention) {
  ExpectInvalid(R"({"attention": {"num_random_features": 0}})",
                {"field 'attention.num_random_features' is 0; must be in "
                 "[1, 65536]"});
  ExpectInvalid(R"({"attention": {"kernel": "trig",
                                  "num_random_features": 100000}})",
                {"field 'attention.num_random_features' is 100000"});
  // Kernels without a projection ignore the feature count.
  EXPECT_TRUE(
      Parse(R"({"attention": {"kernel": "elu+1", "num_random_features": 0}})")
          .ok());
  ExpectInvalid(R"({"attention": {"feature_epsilon": -1}})",
                {"field 'attention.feature_epsilon' is -1"});
  ExpectInvalid(R"({"block": "isab", "num_inducing_points": 4,
                    "attention": {"causal": true}})",
                {"field 'attention.causal'", "isab"});
  ExpectInvalid(R"({"attention": {"orthogonal": false, "simplex": true}})",
                {"field 'attention.simplex' is true", "orthogonal false"});
  ExpectInvalid(R"({"hidden_size": 4, "num_attention_heads": 4,
                    "intermediate_size": 8,
                    "attention": {"simplex": true}})",
                {"field 'attention.simplex' is true", "head size 1"});
  EXPECT_TRUE(Parse(R"({"attention": {"simplex": true}})").ok());
}

TEST(ModelConfigTest, ValidatesBlocks) {
  ExpectInvalid(R"({"block": "cross_attention"})",
                {"field 'num_latents' is 0; must be in [1, 65536]"});
  ExpectInvalid(R"({"block": "isab"})",
                {"field 'num_inducing_points' is 0; must be in [1, 65536]"});
  ExpectInvalid(R"({"num_latents": 8})",
                {"field 'num_latents' is 8; must be in [0, 0]"});
  EXPECT_TRUE(Parse(R"({"block": "cross_attention", "num_latents": 8})").ok());
}

TEST(ModelConfigTest, ValidatesTheTokenizer) {
  ExpectInvalid(R"({"tokenizer": {"file": "../tokenizer.json"}})",
                {"field 'tokenizer.file' is \"../tokenizer.json\"; must be a "
                 "file name in the model's folder, without a directory"});
  ExpectInvalid(R"({"tokenizer": {"file": ".."}})",
                {"field 'tokenizer.file' is \"..\""});
  // The revision leaves hidden files out, so a hidden tokenizer file is
  // refused: an edited ".vocab.txt" would serve under the old revision.
  ExpectInvalid(R"({"tokenizer": {"file": ".vocab.txt"}})",
                {"field 'tokenizer.file' is \".vocab.txt\"; must not be a "
                 "hidden file"});
  ExpectInvalid(R"({"tokenizer": {"file": "vocab.bin"}})",
                {"must end in \".json\" (tokenizer.json), \".txt\""});
  ExpectInvalid(R"({"tokenizer": {"file": "vocab.txt",
                    "max_input_chars_per_word": 0}})",
                {"field 'tokenizer.max_input_chars_per_word' is 0"});
  ExpectInvalid(R"({"tokenizer": {"cls_token": ""}})",
                {"field 'tokenizer.cls_token' is 0 bytes long; must be 1 to "
                 "256"});
  ExpectInvalid(R"({"tokenizer": {"strip_accents": true}})",
                {"field 'tokenizer.strip_accents' must be one of "
                 "\"as_lowercase\", \"strip\", \"keep\""});
  ExpectInvalid(R"({"tokenizer": {"files": "tokenizer.json"}})",
                {"unknown field 'tokenizer.files'"});
  for (const char* file : {"tokenizer.json", "vocab.txt", "spiece.model"}) {
    const auto config =
        Parse(absl::StrCat(R"({"tokenizer": {"file": ")", file, R"("}})"));
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->tokenizer.file, file);
  }
  EXPECT_EQ(TokenizerFileTypeOf(TokenizerConfig()), TokenizerFileType::kNone);
}

}  // namespace
}  // namespace favor::model
