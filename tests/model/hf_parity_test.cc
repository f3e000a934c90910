// Hugging Face folders against references transcribed from each
// architecture's published modelling code. hf_reference.py (the hf_parity
// ctest fixture) writes one untouched-looking folder per case (real config,
// real weight names, task prefixes and heads, sentence-transformers' files)
// with random weights, and the float64 reference's outputs for several
// sequences; here Favor reads the folder as it would from a model
// repository and runs the same sequences packed into one call, so packing
// is checked too. Each case prints its worst relative error.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/attention/parallelism.h"
#include "server/model/model.h"
#include "server/model/model_folder.h"

namespace favor::model {
namespace {

using Json = nlohmann::json;

// Relative to each vector's scale: float32 against float64 from the same
// float32 weights, as model_parity_test.cc.
constexpr double kTolerance = 1e-5;

std::string Dir() {
  const char* dir = std::getenv("FAVOR_HF_PARITY_DIR");
  return dir != nullptr ? dir : FAVOR_HF_PARITY_DIR;
}

Json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
}

double RelativeError(absl::Span<const float> actual, const Json& expected) {
  double error = 0, scale = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double want = expected[i].get<double>();
    error = std::max(error, std::abs(actual[i] - want));
    scale = std::max(scale, std::abs(want));
  }
  return error / std::max(scale, 1e-30);
}

// Each sequence's rows of `out` against `want` (a list of rows per
// sequence); the worst relative error.
double ExpectRowsMatch(const Embeddings& out, const Json& want,
                       const std::string& what) {
  EXPECT_EQ(out.num_sequences(), static_cast<int64_t>(want.size())) << what;
  double worst = 0;
  for (int64_t s = 0; s < std::min<int64_t>(out.num_sequences(), want.size());
       ++s) {
    const int64_t rows = out.row_offsets[s + 1] - out.row_offsets[s];
    EXPECT_EQ(rows, static_cast<int64_t>(want[s].size())) << what;
    for (int64_t r = 0; r < std::min<int64_t>(rows, want[s].size()); ++r) {
      EXPECT_EQ(out.dim, static_cast<int64_t>(want[s][r].size())) << what;
      if (out.dim != static_cast<int64_t>(want[s][r].size())) continue;
      const double error =
          RelativeError(out.Row(out.row_offsets[s] + r), want[s][r]);
      worst = std::max(worst, error);
      EXPECT_LE(error, kTolerance) << what << ": sequence " << s << ", row "
                                   << r;
    }
  }
  return worst;
}

std::vector<std::string> Cases() {
  const Json cases = ReadJson(Dir() + "/cases.json");
  if (!cases.is_array()) return {"(cases.json missing)"};
  return cases.get<std::vector<std::string>>();
}

class HfParityTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { attention::ConfigureCpuParallelism({}); }

  void SetUp() override {
    expected_ = ReadJson(Dir() + "/expected/" + GetParam() + ".json");
    ASSERT_TRUE(expected_.is_object())
        << "cannot read " << Dir() << "/expected/" << GetParam()
        << ".json: run this test through ctest, whose hf_parity_reference "
           "fixture writes it with tests/model/hf_reference.py";
  }

  std::string Folder() const { return Dir() + "/repository/" + GetParam(); }

  Json expected_;
};

TEST_P(HfParityTest, TheFolderReadsAsItsArchitectureSays) {
  auto folder = ReadModelFolder(Folder());
  ASSERT_TRUE(folder.ok()) << folder.status();
  EXPECT_EQ(folder->format, FolderFormat::kHuggingFace);
  EXPECT_EQ(folder->architecture, expected_["architecture"].get<std::string>());
  EXPECT_EQ(NameOf(folder->config.pooling),
            expected_["pooling"].get<std::string>());
  EXPECT_EQ(folder->config.normalize, expected_["normalize"].get<bool>());
  EXPECT_EQ(folder->config.max_sequence_length,
            expected_["max_sequence_length"].get<int64_t>());
  // As trained (exact attention), unless favor.json says otherwise.
  EXPECT_EQ(attention::KernelName(folder->config.attention.kernel),
            expected_["kernel"].get<std::string>());
}

TEST_P(HfParityTest, TokenStatesAndEmbeddingsMatchTheReference) {
  auto model = Model::Load(Folder());
  ASSERT_TRUE(model.ok()) << model.status();
  const auto ids = expected_["token_ids"].get<std::vector<int32_t>>();
  const auto offsets = expected_["offsets"].get<std::vector<int64_t>>();

  EmbedOptions tokens;
  tokens.pooling = Pooling::kNone;
  tokens.normalize = false;
  auto states = (*model)->Embed(ids, offsets, tokens);
  ASSERT_TRUE(states.ok()) << states.status();
  const double worst_tokens =
      ExpectRowsMatch(*states, expected_["tokens"], "token states");

  // An Embed call without options pools as the folder says.
  auto pooled = (*model)->Embed(ids, offsets, {});
  ASSERT_TRUE(pooled.ok()) << pooled.status();
  Json want = Json::array();
  for (const Json& vector : expected_["pooled"]) want.push_back({vector});
  const double worst_pooled = ExpectRowsMatch(*pooled, want, "embeddings");
  std::printf("%s: worst relative error %.2e (token states), %.2e "
              "(embeddings)\n",
              GetParam().c_str(), worst_tokens, worst_pooled);
}

// Folders that must not load, each made from the fixture's plain BERT
// folder with one thing broken: the message names the file and the cause.
class HfBadFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "favor_hf_bad.XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    std::filesystem::copy(Dir() + "/repository/bert", dir_,
                          std::filesystem::copy_options::recursive);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string LoadError() {
    auto model = Model::Load(dir_);
    EXPECT_FALSE(model.ok());
    return model.ok() ? "" : std::string(model.status().message());
  }

  std::string dir_;
};

TEST_F(HfBadFolderTest, TheUntouchedCopyLoads) {
  EXPECT_TRUE(Model::Load(dir_).ok());
}

TEST_F(HfBadFolderTest, AMissingWeightsFileIsNamed) {
  std::filesystem::remove(dir_ + "/model.safetensors");
  EXPECT_THAT(LoadError(), ::testing::HasSubstr("model.safetensors"));
}

TEST_F(HfBadFolderTest, ATruncatedWeightsFileIsNamed) {
  const std::string path = dir_ + "/model.safetensors";
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  EXPECT_THAT(LoadError(), ::testing::HasSubstr("model.safetensors"));
}

TEST_F(HfBadFolderTest, AShapeTheConfigDoesNotGiveNamesTheTensor) {
  Json config = ReadJson(dir_ + "/config.json");
  config["intermediate_size"] = 64;
  std::ofstream(dir_ + "/config.json") << config.dump();
  const std::string message = LoadError();
  EXPECT_THAT(message, ::testing::HasSubstr("model.safetensors"));
  EXPECT_THAT(message, ::testing::HasSubstr("intermediate.dense.weight"));
}

TEST_F(HfBadFolderTest, AVocabularyTheWeightsDoNotHoldIsAnError) {
  Json config = ReadJson(dir_ + "/config.json");
  config["vocab_size"] = 96;
  std::ofstream(dir_ + "/config.json") << config.dump();
  EXPECT_THAT(LoadError(), ::testing::HasSubstr("word_embeddings"));
}

// favor.json's dtype is the model's own, checked like the server's: float16
// needs a GPU; bfloat16 loads where the CPU runs it, else the model alone
// fails with FAILED_PRECONDITION.
TEST_F(HfBadFolderTest, TheOverlaysDtypeIsTheModelsOwn) {
  std::ofstream(dir_ + "/favor.json") << R"({"dtype": "float16"})";
  auto model = Model::Load(dir_);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()),
              ::testing::HasSubstr("float16"));
  std::ofstream(dir_ + "/favor.json") << R"({"dtype": "float64"})";
  EXPECT_THAT(LoadError(), ::testing::HasSubstr("favor.json"));
  std::ofstream(dir_ + "/favor.json") << R"({"dtype": "bfloat16"})";
  model = Model::Load(dir_);
  if (model.ok()) {
    EXPECT_EQ((*model)->description().dtype, ComputeDType::kBFloat16);
  } else {
    EXPECT_EQ(model.status().code(), absl::StatusCode::kFailedPrecondition)
        << model.status();
  }
}

INSTANTIATE_TEST_SUITE_P(Folders, HfParityTest, ::testing::ValuesIn(Cases()),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace favor::model
