#include "client/cli/json_output.h"

#include "gtest/gtest.h"

namespace favor::cli {
namespace {

TEST(JsonOutputTest, EmbedResultHasProtoFieldNames) {
  EmbedResult result;
  result.model = "default";
  result.model_version = "v1";
  result.num_tokens = 5;
  result.timing.queue_time = absl::Microseconds(12);
  result.timing.compute_time = absl::Microseconds(340);
  Embedding first;
  first.values = {0.5f, -0.25f};
  first.num_tokens = 3;
  Embedding second;
  second.values = {1.0f, 0.0f};
  second.num_tokens = 2;
  second.num_truncated_tokens = 4;
  second.token_embeddings =
      Tensor::FromFloats({2, 2}, std::vector<float>{1, 2, 3, 4});
  result.embeddings = {first, second};
  auto json = EmbedResultToJson(result);
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ((*json)["model"], "default");
  EXPECT_EQ((*json)["model_version"], "v1");
  EXPECT_EQ((*json)["num_tokens"], 5);
  EXPECT_EQ((*json)["timing"]["queue_time_micros"], 12);
  EXPECT_EQ((*json)["timing"]["compute_time_micros"], 340);
  ASSERT_EQ((*json)["embeddings"].size(), 2u);
  EXPECT_EQ((*json)["embeddings"][0]["values"], nlohmann::json({0.5, -0.25}));
  EXPECT_FALSE((*json)["embeddings"][0].contains("token_embeddings"));
  EXPECT_EQ((*json)["embeddings"][1]["num_truncated_tokens"], 4);
  const nlohmann::json& tokens = (*json)["embeddings"][1]["token_embeddings"];
  EXPECT_EQ(tokens["shape"], nlohmann::json({2, 2}));
  EXPECT_EQ(tokens["dtype"], "float32");
  EXPECT_EQ(tokens["values"], nlohmann::json({1.0, 2.0, 3.0, 4.0}));
}

TEST(JsonOutputTest, SpansAndChunksOnlyWhenThereAreSome) {
  EmbedResult result;
  Embedding spanned;
  spanned.values = {1, 0};
  spanned.spans = {{{0.5f, 0.5f}, 3, {}}, {{-1.0f, 0.0f}, 2, {}}};
  Embedding chunked;
  chunked.num_chunks = 4;
  result.embeddings = {spanned, chunked};
  auto json = EmbedResultToJson(result);
  ASSERT_TRUE(json.ok()) << json.status();
  const nlohmann::json& spans = (*json)["embeddings"][0]["spans"];
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0]["num_tokens"], 3);
  EXPECT_EQ(spans[0]["values"], nlohmann::json({0.5, 0.5}));
  EXPECT_EQ(spans[1]["values"], nlohmann::json({-1.0, 0.0}));
  EXPECT_FALSE((*json)["embeddings"][0].contains("num_chunks"));
  EXPECT_FALSE((*json)["embeddings"][1].contains("spans"));
  EXPECT_EQ((*json)["embeddings"][1]["num_chunks"], 4);
}

TEST(JsonOutputTest, QuantizedFormsOnlyWhenAsked) {
  EmbedResult result;
  Embedding embedding;
  embedding.quantized.int8 = {-1, 127};
  embedding.quantized.ubinary = {192};
  embedding.spans = {{{}, 2, {{}, {7}, {}, {}}}};
  result.embeddings = {embedding};
  auto json = EmbedResultToJson(result);
  ASSERT_TRUE(json.ok()) << json.status();
  const nlohmann::json& first = (*json)["embeddings"][0];
  EXPECT_EQ(first["int8"], nlohmann::json({-1, 127}));
  EXPECT_EQ(first["ubinary"], nlohmann::json({192}));
  EXPECT_FALSE(first.contains("uint8") || first.contains("binary"));
  EXPECT_EQ(first["spans"][0]["uint8"], nlohmann::json({7}));
  EXPECT_FALSE(first["spans"][0].contains("int8"));
}

TEST(JsonOutputTest, TokenizeResultAsParallelArrays) {
  TokenizeResult result;
  result.model = "bert";
  TokenizedText text;
  text.ids = {101, 7592, 102};
  text.tokens = {"[CLS]", "hello", "[SEP]"};
  text.begin_offsets = {0, 0, 0};
  text.end_offsets = {0, 5, 0};
  text.special = {true, false, true};
  result.texts = {text};
  const nlohmann::json json = TokenizeResultToJson(result);
  EXPECT_EQ(json["model"], "bert");
  ASSERT_EQ(json["texts"].size(), 1u);
  const nlohmann::json& first = json["texts"][0];
  EXPECT_EQ(first["ids"], nlohmann::json({101, 7592, 102}));
  EXPECT_EQ(first["tokens"], nlohmann::json({"[CLS]", "hello", "[SEP]"}));
  EXPECT_EQ(first["begin_offsets"], nlohmann::json({0, 0, 0}));
  EXPECT_EQ(first["end_offsets"], nlohmann::json({0, 5, 0}));
  EXPECT_EQ(first["special"], nlohmann::json({true, false, true}));
}

TEST(JsonOutputTest, ModelInfoHasItsTokenizerAndTextLimits) {
  ModelInfo model;
  model.config.config_json = "{}";
  model.config.tokenizer.kind = "wordpiece";
  model.config.tokenizer.file = "tokenizer.json";
  model.config.tokenizer.special_tokens = {{"cls", "[CLS]", 101},
                                           {"sep", "[SEP]", 102}};
  model.limits.max_text_bytes_per_call = 1 << 20;
  model.limits.max_spans_per_input = 512;
  const nlohmann::json json = ModelInfoToJson(model);
  const nlohmann::json& tokenizer = json["config"]["tokenizer"];
  EXPECT_EQ(tokenizer["kind"], "wordpiece");
  EXPECT_EQ(tokenizer["file"], "tokenizer.json");
  EXPECT_EQ(tokenizer["special_tokens"][1],
            nlohmann::json({{"role", "sep"}, {"token", "[SEP]"}, {"id", 102}}));
  EXPECT_EQ(json["limits"]["max_text_bytes_per_call"], 1 << 20);
  EXPECT_EQ(json["limits"]["max_spans_per_input"], 512);
}

TEST(JsonOutputTest, MalformedTokenEmbeddingsAreAnError) {
  EmbedResult result;
  Embedding embedding;
  Tensor bad;
  bad.shape = {2, 2};
  bad.data = "abc";
  embedding.token_embeddings = bad;
  result.embeddings = {embedding};
  EXPECT_EQ(EmbedResultToJson(result).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(JsonOutputTest, ModelListNestsConfigJson) {
  ModelInfo model;
  model.name = "small";
  model.is_default = true;
  model.devices = {"cpu"};
  model.config.vocab_size = 100;
  model.config.hidden_size = 32;
  model.config.attention.kernel = "favor+";
  model.config.default_pooling = Pooling::kMean;
  model.config.default_normalization = Normalization::kL2;
  model.config.config_json = R"({"vocab_size": 100})";
  model.limits.max_tokens_per_input = 128;
  ModelList list;
  list.default_model = "small";
  list.models = {model};
  const nlohmann::json json = ModelListToJson(list);
  EXPECT_EQ(json["default_model"], "small");
  const nlohmann::json& info = json["models"][0];
  EXPECT_EQ(info["name"], "small");
  EXPECT_EQ(info["is_default"], true);
  EXPECT_EQ(info["devices"], nlohmann::json({"cpu"}));
  EXPECT_EQ(info["config"]["vocab_size"], 100);
  EXPECT_EQ(info["config"]["attention"]["kernel"], "favor+");
  EXPECT_EQ(info["config"]["default_pooling"], "mean");
  EXPECT_EQ(info["config"]["default_normalization"], "l2");
  EXPECT_EQ(info["config"]["config_json"]["vocab_size"], 100);
  EXPECT_EQ(info["limits"]["max_tokens_per_input"], 128);
}

TEST(JsonOutputTest, AttendSummary) {
  AttendResult result;
  result.kernel = "softmax";
  result.output =
      Tensor::FromFloats({1, 1, 2, 2}, std::vector<float>{3, -4, 0, 0});
  auto json = AttendSummaryToJson(result);
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ((*json)["kernel"], "softmax");
  const nlohmann::json& output = (*json)["output"];
  EXPECT_EQ(output["shape"], nlohmann::json({1, 1, 2, 2}));
  EXPECT_EQ(output["elements"], 4);
  EXPECT_EQ(output["min"], -4.0);
  EXPECT_EQ(output["max"], 3.0);
  EXPECT_DOUBLE_EQ(output["mean"].get<double>(), -0.25);
  EXPECT_DOUBLE_EQ(output["l2_norm"].get<double>(), 5.0);
}

}  // namespace
}  // namespace favor::cli
