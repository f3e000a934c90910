// ReadModelFolder: which format a folder is in, what a Hugging Face folder's
// config, overlay and sentence-transformers' files make of it, and the
// messages for folders Favor cannot serve (each names the file and the
// cause). hf_parity_test.cc runs such folders against references.
#include "server/model/model_folder.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/model/temp_dir_test.h"

namespace favor::model {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
using Json = nlohmann::json;

class ModelFolderTest : public TempDirTest {
 protected:
  void Write(const std::string& relative, const std::string& text) {
    const std::filesystem::path path = dir_ + "/" + relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  void Write(const std::string& relative, const Json& json) {
    Write(relative, json.dump(1));
  }

  // A small BertModel's config.json, as the hub has it.
  static Json Bert() {
    return {{"architectures", {"BertModel"}},
            {"model_type", "bert"},
            {"hidden_size", 32},
            {"num_attention_heads", 4},
            {"num_hidden_layers", 2},
            {"intermediate_size", 64},
            {"vocab_size", 100},
            {"max_position_embeddings", 128},
            {"type_vocab_size", 2},
            {"hidden_act", "gelu"},
            {"layer_norm_eps", 1e-12},
            {"pad_token_id", 0},
            {"position_embedding_type", "absolute"},
            {"transformers_version", "4.44.0"}};
  }

  void WriteSentenceTransformers(const Json& pooling, bool normalize) {
    Json modules = {
        {{"idx", 0}, {"path", ""},
         {"type", "sentence_transformers.models.Transformer"}},
        {{"idx", 1}, {"path", "1_Pooling"},
         {"type", "sentence_transformers.models.Pooling"}}};
    if (normalize) {
      modules.push_back({{"idx", 2}, {"path", "2_Normalize"},
                         {"type", "sentence_transformers.models.Normalize"}});
    }
    Write("modules.json", modules);
    Write("1_Pooling/config.json", pooling);
  }

  absl::StatusOr<ModelFolder> Read() { return ReadModelFolder(dir_); }
};

TEST_F(ModelFolderTest, AHubBertFolderRunsAsTrained) {
  Write("config.json", Bert());
  auto folder = Read();
  ASSERT_TRUE(folder.ok()) << folder.status();
  EXPECT_EQ(folder->format, FolderFormat::kHuggingFace);
  EXPECT_EQ(folder->architecture, "BertModel");
  EXPECT_EQ(folder->config.hidden_size, 32);
  EXPECT_EQ(folder->config.intermediate_size, 64);
  EXPECT_EQ(folder->config.attention.kernel, attention::Kernel::kSoftmaxExact);
  EXPECT_EQ(folder->config.max_sequence_length, 128);
  EXPECT_EQ(folder->config.position_ids, PositionIds::kFromZero);
  EXPECT_TRUE(folder->overlay_fields.empty());
  EXPECT_THAT(folder->files, ElementsAre("config.json", "model.safetensors"));
}

TEST_F(ModelFolderTest, RobertaPositionsStartPastThePaddingId) {
  Json config = Bert();
  config["model_type"] = "xlm-roberta";
  config["architectures"] = {"XLMRobertaForMaskedLM"};
  config["pad_token_id"] = 1;
  config["max_position_embeddings"] = 514;
  Write("config.json", config);
  auto folder = Read();
  ASSERT_TRUE(folder.ok()) << folder.status();
  EXPECT_EQ(folder->architecture, "XLMRobertaModel");
  EXPECT_EQ(folder->weight_prefix, "roberta.");
  EXPECT_EQ(folder->config.position_ids, PositionIds::kAfterPadding);
  EXPECT_EQ(folder->config.max_sequence_length, 512);
}

TEST_F(ModelFolderTest, FavorsOwnConfigKeepsItsFormat) {
  // Favor's schema may carry a model_type too; its own fields decide.
  Json config = Bert();
  config["version"] = "3";
  config["attention"] = {{"kernel", "favor+"}, {"num_random_features", 16}};
  config["max_sequence_length"] = 64;
  config.erase("architectures");
  config.erase("transformers_version");
  config.erase("position_embedding_type");
  Write("config.json", config);
  auto folder = Read();
  ASSERT_TRUE(folder.ok()) << folder.status();
  EXPECT_EQ(folder->format, FolderFormat::kFavor);
  EXPECT_EQ(folder->config.attention.kernel, attention::Kernel::kFavorPositive);
}

TEST_F(ModelFolderTest, TheOverlayHoldsOnlyFavorsChoices) {
  Write("config.json", Bert());
  Write("favor.json", Json{{"version", "bert-favor-1"},
                           {"attention", {{"kernel", "favor+"},
                                          {"num_random_features", 64}}},
                           {"max_sequence_length", 100}});
  auto folder = Read();
  ASSERT_TRUE(folder.ok()) << folder.status();
  EXPECT_EQ(folder->config.attention.kernel, attention::Kernel::kFavorPositive);
  EXPECT_EQ(folder->config.attention.num_random_features, 64);
  EXPECT_EQ(folder->config.max_sequence_length, 100);
  EXPECT_EQ(folder->config.version, "bert-favor-1");
  EXPECT_THAT(folder->overlay_fields,
              UnorderedElementsAre("version", "attention.kernel",
                                   "attention.num_random_features",
                                   "max_sequence_length"));
  EXPECT_THAT(folder->files,
              ElementsAre("config.json", "favor.json", "model.safetensors"));
}

TEST_F(ModelFolderTest, TheOverlayMayChooseTheDtype) {
  Write("config.json", Bert());
  Write("favor.json", Json{{"dtype", "bfloat16"}, {"max_sequence_length", 64}});
  auto folder = Read();
  ASSERT_TRUE(folder.ok()) << folder.status();
  EXPECT_EQ(folder->dtype, "bfloat16");
  EXPECT_THAT(folder->overlay_fields,
              UnorderedElementsAre("dtype", "max_sequence_length"));
  Write("favor.json", Json{{"dtype", 16}});
  EXPECT_THAT(std::string(Read().status().message()),
              HasSubstr("field 'dtype' must be a string"));
}

TEST_F(ModelFolderTest, TheOverlayCannotChangeTheTrainedModel) {
  Write("config.json", Bert());
  Write("favor.json", Json{{"hidden_size", 64}});
  auto folder = Read();
  ASSERT_FALSE(folder.ok());
  EXPECT_EQ(folder.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(folder.status().message(), HasSubstr("favor.json"));
  EXPECT_THAT(folder.status().message(), HasSubstr("hidden_size"));
}

TEST_F(ModelFolderTest, TheOverlayCannotReachPastThePositionTable) {
  Write("config.json", Bert());
  Write("favor.json", Json{{"max_sequence_length", 129}});
  auto folder = Read();
  ASSERT_FALSE(folder.ok());
  EXPECT_THAT(folder.status().message(), HasSubstr("favor.json"));
  EXPECT_THAT(folder.status().message(), HasSubstr("max_sequence_length"));
}

TEST_F(ModelFolderTest, SentenceTransformersChooseThePoolingAndTheLength) {
  Write("config.json", Bert());
  WriteSentenceTransformers({{"pooling_mode_cls_token", true},
                             {"pooling_mode_mean_tokens", false}},
                            /*normalize=*/true);
  Write("sentence_bert_config.json", Json{{"max_seq_length", 96}});
  auto folder = Read();
  ASSERT_TRUE(folder.ok()) << folder.status();
  EXPECT_EQ(folder->config.pooling, Pooling::kCls);
  EXPECT_TRUE(folder->config.normalize);
  EXPECT_EQ(folder->config.max_sequence_length, 96);
  EXPECT_THAT(folder->files,
              ElementsAre("1_Pooling/config.json", "config.json",
                          "model.safetensors", "modules.json",
                          "sentence_bert_config.json"));
}

TEST_F(ModelFolderTest, MaxSeqLengthNeverPassesTheModelsLimit) {
  Write("config.json", Bert());
  WriteSentenceTransformers({{"pooling_mode_mean_tokens", true}},
                            /*normalize=*/false);
  Write("sentence_bert_config.json", Json{{"max_seq_length", 8192}});
  auto folder = Read();
  ASSERT_TRUE(folder.ok()) << folder.status();
  EXPECT_EQ(folder->config.pooling, Pooling::kMean);
  EXPECT_FALSE(folder->config.normalize);
  EXPECT_EQ(folder->config.max_sequence_length, 128);
}

TEST_F(ModelFolderTest, PoolingsFavorDoesNotRunAreRefusedByName) {
  Write("config.json", Bert());
  WriteSentenceTransformers({{"pooling_mode_weightedmean_tokens", true}},
                            /*normalize=*/false);
  auto folder = Read();
  ASSERT_FALSE(folder.ok());
  EXPECT_THAT(folder.status().message(), HasSubstr("1_Pooling/config.json"));
  EXPECT_THAT(folder.status().message(),
              HasSubstr("pooling_mode_weightedmean_tokens"));
}

TEST_F(ModelFolderTest, PromptsComeFromConfigSentenceTransformers) {
  Write("config.json", Bert());
  Write("config_sentence_transformers.json",
        Json{{"prompts", {{"search_query", "search_query: "},
                          {"search_document", "search_document: "}}},
             {"default_prompt_name", "search_document"},
             {"similarity_fn_name", "cosine"}});
  auto folder = Read();
  ASSERT_TRUE(folder.ok()) << folder.status();
  EXPECT_THAT(folder->prompts,
              UnorderedElementsAre(
                  ::testing::Pair("search_query", "search_query: "),
                  ::testing::Pair("search_document", "search_document: ")));
  EXPECT_EQ(folder->default_prompt_name, "search_document");
  EXPECT_THAT(folder->files,
              ElementsAre("config.json", "config_sentence_transformers.json",
                          "model.safetensors"));
  // A default that is not among them, a prompt that is not text.
  Write("config_sentence_transformers.json",
        Json{{"prompts", {{"q", "q: "}}}, {"default_prompt_name", "d"}});
  EXPECT_THAT(std::string(Read().status().message()),
              HasSubstr("\"default_prompt_name\" must name one of"));
  Write("config_sentence_transformers.json", Json{{"prompts", {{"q", 3}}}});
  EXPECT_THAT(std::string(Read().status().message()),
              HasSubstr("prompt 'q' must be a string"));
  Write("config_sentence_transformers.json",
        std::string("{\"prompts\": {\"q\": \"\xff\"}}"));
  EXPECT_THAT(std::string(Read().status().message()),
              HasSubstr("config_sentence_transformers.json"));
}

TEST_F(ModelFolderTest, PoolingWithoutThePromptIsRefused) {
  Write("config.json", Bert());
  WriteSentenceTransformers({{"pooling_mode_mean_tokens", true},
                             {"include_prompt", false}},
                            /*normalize=*/false);
  auto folder = Read();
  ASSERT_FALSE(folder.ok());
  EXPECT_THAT(folder.status().message(), HasSubstr("include_prompt"));
}

TEST_F(ModelFolderTest, ModulesFavorDoesNotRunAreRefusedByName) {
  Write("config.json", Bert());
  WriteSentenceTransformers({{"pooling_mode_mean_tokens", true}},
                            /*normalize=*/false);
  Write("modules.json",
        Json{{{"idx", 0}, {"path", ""},
              {"type", "sentence_transformers.models.Transformer"}},
             {{"idx", 1}, {"path", "1_Pooling"},
              {"type", "sentence_transformers.models.Pooling"}},
             {{"idx", 2}, {"path", "2_Dense"},
              {"type", "sentence_transformers.models.Dense"}}});
  auto folder = Read();
  ASSERT_FALSE(folder.ok());
  EXPECT_THAT(folder.status().message(), HasSubstr("modules.json"));
  EXPECT_THAT(folder.status().message(), HasSubstr("Dense"));
}

TEST_F(ModelFolderTest, AModulePathCannotLeaveTheFolder) {
  Write("config.json", Bert());
  Write("modules.json",
        Json{{{"idx", 1}, {"path", "../elsewhere"},
              {"type", "sentence_transformers.models.Pooling"}}});
  auto folder = Read();
  ASSERT_FALSE(folder.ok());
  EXPECT_THAT(folder.status().message(), HasSubstr("leaves the model"));
}

TEST_F(ModelFolderTest, AnUnknownArchitectureListsTheSupportedOnes) {
  Json config = Bert();
  config["model_type"] = "gpt2";
  Write("config.json", config);
  auto folder = Read();
  ASSERT_FALSE(folder.ok());
  EXPECT_EQ(folder.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(folder.status().message(), HasSubstr("config.json"));
  EXPECT_THAT(folder.status().message(), HasSubstr("gpt2"));
  EXPECT_THAT(folder.status().message(), HasSubstr("xlm-roberta"));
}

TEST_F(ModelFolderTest, ValuesTheAdapterDoesNotRunAreRefusedByField) {
  for (const auto& [field, value] :
       {std::pair<std::string, Json>{"hidden_act", "quick_gelu"},
        {"position_embedding_type", "relative_key"},
        {"is_decoder", true},
        {"hidden_size", "32"}}) {
    SCOPED_TRACE(field);
    Json config = Bert();
    config[field] = value;
    Write("config.json", config);
    auto folder = Read();
    ASSERT_FALSE(folder.ok());
    EXPECT_THAT(folder.status().message(), HasSubstr("config.json"));
    EXPECT_THAT(folder.status().message(), HasSubstr(field));
  }
}

TEST_F(ModelFolderTest, ATruncatedConfigNamesItsFile) {
  Write("config.json", Bert().dump().substr(0, 40));
  auto folder = Read();
  ASSERT_FALSE(folder.ok());
  EXPECT_THAT(folder.status().message(), HasSubstr("config.json"));
}

TEST_F(ModelFolderTest, AMissingConfigIsNotFound) {
  auto folder = Read();
  ASSERT_FALSE(folder.ok());
  EXPECT_EQ(folder.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ModelFolderTest, TheTokenizerIsTheFoldersOwn) {
  Write("config.json", Bert());
  Write("vocab.txt", std::string("[PAD]\n[UNK]\n"));
  Write("tokenizer_config.json", Json{{"do_lower_case", false}});
  auto folder = Read();
  ASSERT_TRUE(folder.ok()) << folder.status();
  EXPECT_EQ(folder->config.tokenizer.file, "vocab.txt");
  EXPECT_FALSE(folder->config.tokenizer.lowercase);
  Write("tokenizer.json", std::string("{}"));
  folder = Read();
  ASSERT_TRUE(folder.ok()) << folder.status();
  EXPECT_EQ(folder->config.tokenizer.file, "tokenizer.json");
}

}  // namespace
}  // namespace favor::model
