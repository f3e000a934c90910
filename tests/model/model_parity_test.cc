// The C++ encoder against an independent implementation, on every axis of
// the model config. parity_reference.py (a ctest fixture) writes one model
// per case of tests/model/parity/cases.py, drawn at random and exported
// through tools/export_state_dict.py, and the reference outputs, computed
// per sequence in float64 from the formulas of docs/models.md (PyTorch's own
// layers where they exist, tests/attention/kernel_reference.py's kernels,
// tests/attention/projection_reference.py's projections); here the same
// sequences run packed into one call, so the comparison also checks that
// packing changes nothing.
//
// Covered, one case per value over a small base (exact attention, post-norm
// LayerNorm, GELU, learned positions, encoder blocks, mean pooling):
// - norm placement (post, pre) × norm type (LayerNorm, ScaleNorm), ε at
//   0.05 for LayerNorm and ScaleNorm's floor active for part of the rows;
// - activations gelu, gelu_tanh, relu;
// - positions absolute, rotary (bases 10000 and 500), none; no token types;
// - every kernel (softmax, favor+, favor++, hyperbolic, trig, relu, elu+1,
//   exp), alone, causal, and with rotary positions; feature ε at 1e-2 for
//   each kernel that adds one, and 0;
// - projections drawn from the seed (orthogonal with χ and √d norms, iid,
//   simplex, a non-zero seed; m not a multiple of d) and stored;
// - blocks encoder, cross_attention and isab, with linear kernels (their
//   sublayers number the drawn projections) and pre-norm;
// - pooling mean, cls, attention and none, with and without L2
//   normalisation, both as a request's options and as the config's
//   defaults.
// The base cases exact_post and exact_pre are exported from
// torch.nn.TransformerEncoder's own state dict, through the exporter's
// renaming. Each case prints its worst relative error, so that the headroom
// under the tolerance stays visible; docs/testing.md lists the planted bugs
// the test caught.
#include <algorithm>
#include <cmath>
#include <cstdio>
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

// Relative to each vector's scale (max |expected|): the float32 encoder
// against a float64 reference from the same float32 weights. The measured
// errors are printed per case.
constexpr double kTolerance = 1e-5;

// The groups of tests/model/parity/cases.py, one gtest case (and one
// process) each: a process per case would spend most of ctest's time
// loading LibTorch. EveryReferenceGroupRuns checks that the lists agree.
constexpr const char* kGroups[] = {
    "norms",          "activations",     "positions",   "kernels", "causal",
    "rotary_kernels", "feature_epsilon", "projections", "blocks",  "pooling",
};

// Where the model_parity_reference fixture writes (a compile definition),
// unless the environment says otherwise.
std::string ParityDir() {
  const char* dir = std::getenv("FAVOR_PARITY_DIR");
  return dir != nullptr ? dir : FAVOR_PARITY_DIR;
}

// A JSON file the fixture wrote, or a discarded value when it cannot be read.
Json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
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

// One case: its model, its inputs and the reference's outputs.
class ParityCase {
 public:
  // False, with a test failure saying why, when the case cannot run.
  bool Load(const std::string& name) {
    name_ = name;
    const std::string path = ParityDir() + "/expected/" + name + ".json";
    expected_ = ReadJson(path);
    EXPECT_TRUE(expected_.is_object())
        << "cannot read " << path
        << ": run this test through ctest, whose model_parity_reference "
           "fixture writes it with tests/model/parity_reference.py";
    if (!expected_.is_object()) return false;
    auto model = Model::Load(ParityDir() + "/repository/" + name);
    EXPECT_TRUE(model.ok()) << model.status();
    if (!model.ok()) return false;
    model_ = *std::move(model);
    ids_ = expected_["token_ids"].get<std::vector<int32_t>>();
    offsets_ = expected_["offsets"].get<std::vector<int64_t>>();
    return true;
  }

  // Every output vector (tokens, or latents), before pooling.
  double CheckVectors() const {
    EmbedOptions options;
    options.pooling = Pooling::kNone;
    options.normalize = false;
    return ExpectRowsMatch(Embed(options), Case()["tokens"], "vectors");
  }

  // Every pooling, with and without L2 normalisation, as a request's
  // options.
  double CheckPoolings() const {
    double worst = 0;
    for (const auto& [pooling, key] :
         {std::pair{Pooling::kMean, "mean"}, std::pair{Pooling::kCls, "cls"},
          std::pair{Pooling::kAttention, "attention"}}) {
      for (const bool normalize : {false, true}) {
        EmbedOptions options;
        options.pooling = pooling;
        options.normalize = normalize;
        const std::string name =
            std::string(key) + (normalize ? "_normalized" : "");
        // One row per sequence: each expected vector as a list of rows.
        Json want = Json::array();
        for (const Json& vector : Case()[name]) want.push_back({vector});
        worst = std::max(worst, ExpectRowsMatch(Embed(options), want, name));
      }
    }
    return worst;
  }

  // An Embed call without options pools and normalises as the config says.
  double CheckDefaults() const {
    return ExpectRowsMatch(Embed({}), Case()["default"], "defaults");
  }

 private:
  const Json& Case() const { return expected_["case"]; }

  Embeddings Embed(const EmbedOptions& options) const {
    auto embeddings = model_->Embed(ids_, offsets_, options);
    EXPECT_TRUE(embeddings.ok()) << embeddings.status();
    return embeddings.ok() ? *std::move(embeddings) : Embeddings();
  }

  // Each sequence's rows against `want` (per sequence, a list of its rows);
  // returns the worst relative error.
  double ExpectRowsMatch(const Embeddings& out, const Json& want,
                         const std::string& what) const {
    EXPECT_EQ(out.num_sequences(), static_cast<int64_t>(want.size())) << what;
    double worst = 0;
    for (int64_t s = 0; s < out.num_sequences(); ++s) {
      const int64_t rows = out.row_offsets[s + 1] - out.row_offsets[s];
      EXPECT_EQ(rows, static_cast<int64_t>(want[s].size())) << what;
      for (int64_t r = 0; r < std::min<int64_t>(rows, want[s].size()); ++r) {
        const double error =
            RelativeError(out.Row(out.row_offsets[s] + r), want[s][r]);
        worst = std::max(worst, error);
        EXPECT_LE(error, kTolerance)
            << name_ << " " << what << ": sequence " << s << ", row " << r;
      }
    }
    return worst;
  }

  std::string name_;
  Json expected_;
  std::unique_ptr<Model> model_;
  std::vector<int32_t> ids_;
  std::vector<int64_t> offsets_;
};

class ModelParityTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { attention::ConfigureCpuParallelism({}); }
};

TEST_P(ModelParityTest, EveryCaseMatchesTheReference) {
  const Json groups = ReadJson(ParityDir() + "/cases.json");
  ASSERT_TRUE(groups.is_object() && groups.contains(GetParam()))
      << "no group " << GetParam() << " in " << ParityDir()
      << "/cases.json: run this test through ctest, whose "
         "model_parity_reference fixture writes it";
  for (const Json& name : groups[GetParam()]) {
    SCOPED_TRACE(name.get<std::string>());
    ParityCase parity;
    if (!parity.Load(name.get<std::string>())) continue;
    const double vectors = parity.CheckVectors();
    const double poolings = parity.CheckPoolings();
    const double defaults = parity.CheckDefaults();
    // The headroom under the tolerance, visible in the test's output.
    std::printf(
        "[ parity ] %-32s worst relative error: vectors %.1e, poolings "
        "%.1e, defaults %.1e (tolerance %.0e)\n",
        name.get<std::string>().c_str(), vectors, poolings, defaults,
        kTolerance);
    RecordProperty(name.get<std::string>(),
                   std::to_string(std::max({vectors, poolings, defaults})));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Reference, ModelParityTest,
    ::testing::ValuesIn(std::vector<std::string>(std::begin(kGroups),
                                                 std::end(kGroups))),
    [](const auto& param_info) { return param_info.param; });

// A group added to cases.py without its name here would never run.
TEST(ModelParityCasesTest, EveryReferenceGroupRuns) {
  const Json written = ReadJson(ParityDir() + "/cases.json");
  ASSERT_TRUE(written.is_object()) << "run through ctest (see above)";
  std::vector<std::string> names;
  for (const auto& [name, unused] : written.items()) names.push_back(name);
  std::vector<std::string> here(std::begin(kGroups), std::end(kGroups));
  std::sort(names.begin(), names.end());
  std::sort(here.begin(), here.end());
  EXPECT_EQ(names, here);
}

}  // namespace
}  // namespace favor::model
