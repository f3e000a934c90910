// The C++ encoder against an independent implementation: PyTorch's own
// torch.nn.TransformerEncoderLayer stack (and the same stack with FAVOR+
// written in Python from the formulas), exported through
// tools/export_state_dict.py. parity_reference.py writes the models and the
// reference outputs (computed per sequence, in float64) before this test
// runs (a ctest fixture); here the sequences run packed into one batch, so
// the comparison also checks that packing changes nothing.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/attention/parallelism.h"
#include "server/model/model.h"

namespace favor::model {
namespace {

using Json = nlohmann::json;

// Relative to the output's scale, as the issue asks: 1e-4.
constexpr double kTolerance = 1e-4;

// Where the model_parity_reference fixture writes (a compile definition),
// unless the environment says otherwise.
std::string ParityDir() {
  const char* dir = std::getenv("FAVOR_PARITY_DIR");
  return dir != nullptr ? dir : FAVOR_PARITY_DIR;
}

const Json& Expected() {
  static const Json* const expected = [] {
    std::ifstream in(ParityDir() + "/expected.json");
    std::stringstream text;
    text << in.rdbuf();
    return new Json(
        Json::parse(text.str(), nullptr, /*allow_exceptions=*/false));
  }();
  return *expected;
}

// max |actual − expected| / max |expected| over one vector.
double RelativeError(absl::Span<const float> actual, const Json& expected) {
  double error = 0, scale = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double want = expected[i].get<double>();
    error = std::max(error, std::abs(actual[i] - want));
    scale = std::max(scale, std::abs(want));
  }
  return error / std::max(scale, 1e-30);
}

class ModelParityTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { attention::ConfigureCpuParallelism({}); }

  void SetUp() override {
    ASSERT_TRUE(Expected().is_object())
        << "cannot read " << ParityDir()
        << "/expected.json: run this test through ctest, whose "
           "model_parity_reference fixture writes it with "
           "tests/model/parity_reference.py";
    auto model = Model::Load(ParityDir() + "/repository/" + GetParam());
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *std::move(model);
    ids_ = Expected()["token_ids"].get<std::vector<int32_t>>();
    offsets_ = Expected()["offsets"].get<std::vector<int64_t>>();
  }

  const Json& Case() const { return Expected()["cases"][GetParam()]; }

  Embeddings EmbedOrDie(Pooling pooling, bool normalize) const {
    EmbedOptions options;
    options.pooling = pooling;
    options.normalize = normalize;
    auto embeddings = model_->Embed(ids_, offsets_, options);
    EXPECT_TRUE(embeddings.ok()) << embeddings.status();
    return embeddings.ok() ? *std::move(embeddings) : Embeddings();
  }

  // One pooled vector per sequence against the reference's `key` list.
  void ExpectPooledMatch(Pooling pooling, bool normalize,
                         const std::string& key) const {
    const Embeddings out = EmbedOrDie(pooling, normalize);
    const Json& want = Case()[key];
    ASSERT_EQ(out.num_rows(), static_cast<int64_t>(want.size()));
    for (int64_t s = 0; s < out.num_rows(); ++s) {
      EXPECT_LE(RelativeError(out.Row(s), want[s]), kTolerance)
          << "pooling " << key << " of sequence " << s;
    }
  }

  std::unique_ptr<Model> model_;
  std::vector<int32_t> ids_;
  std::vector<int64_t> offsets_;
};

TEST_P(ModelParityTest, EveryTokenMatchesThePythonStack) {
  const Embeddings out = EmbedOrDie(Pooling::kNone, false);
  ASSERT_EQ(out.num_rows(), static_cast<int64_t>(ids_.size()));
  ASSERT_EQ(out.row_offsets, offsets_);
  double worst = 0;
  for (size_t s = 0; s + 1 < offsets_.size(); ++s) {
    const Json& rows = Case()["tokens"][s];
    for (int64_t t = 0; t < offsets_[s + 1] - offsets_[s]; ++t) {
      const double error = RelativeError(out.Row(offsets_[s] + t), rows[t]);
      worst = std::max(worst, error);
      EXPECT_LE(error, kTolerance) << "sequence " << s << ", token " << t;
    }
  }
  RecordProperty("worst_relative_error", std::to_string(worst));
}

// Every pooling, and L2 normalisation, from the same packed run's vectors.
TEST_P(ModelParityTest, EveryPoolingMatches) {
  ExpectPooledMatch(Pooling::kMean, false, "mean");
  ExpectPooledMatch(Pooling::kCls, false, "cls");
  ExpectPooledMatch(Pooling::kAttention, false, "attention");
  ExpectPooledMatch(Pooling::kMean, true, "mean_normalized");
}

INSTANTIATE_TEST_SUITE_P(PyTorch, ModelParityTest,
                         ::testing::Values("exact_post", "favor_post",
                                           "exact_pre"),
                         [](const auto& param_info) {
                           return param_info.param;
                         });

}  // namespace
}  // namespace favor::model
