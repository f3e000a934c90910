// Every kernel against an independent reference: kernel_reference.py writes
// the formulas of each kernel's paper, transcribed in Python (float64, as
// explicit L×L computations, sharing no code with server/attention), and
// their outputs on random cases (batch 2, 3 heads, unequal query and key
// lengths, key padding, causal and not, extreme inputs for exact attention
// and FAVOR+) before this test runs (the kernel_reference ctest fixture).
// Here the library runs the same float32 inputs through Attend (with small
// chunks and tiles, so that the cases cross many of them, and with its
// defaults), AttendPacked and FeatureMap.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "server/attention/attention.h"
#include "server/attention/feature_map.h"
#include "server/attention/parallelism.h"

namespace favor::attention {
namespace {

using Json = nlohmann::json;

// Relative to the output's scale (max |expected|). float32 arithmetic over
// a few dozen terms: the measured errors, printed by each case, are below
// 1e-6 for the ordinary cases.
constexpr double kTolerance = 1e-5;
// Extreme inputs: the float32 logits carry a rounding of about 6e-8 of
// |q||k|/√d, up to 1e6/√8 for the norms of 1e3, so the weights the float64
// reference computes from the same float32 inputs may differ from the
// library's in their exponent. Measured: 2.5e-6 at worst. A lost stabiliser
// gives NaN or the uniform average of the values, errors of order 1.
constexpr double kExtremeTolerance = 1e-4;

std::string CasesFile() {
  const char* file = std::getenv("FAVOR_KERNEL_REFERENCE_FILE");
  return file != nullptr ? file : FAVOR_KERNEL_REFERENCE_FILE;
}

const Json& Cases() {
  static const Json* const cases = [] {
    std::ifstream in(CasesFile());
    std::stringstream text;
    text << in.rdbuf();
    const Json all =
        Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    auto* by_name = new Json(Json::object());
    if (all.is_object()) {
      for (const Json& c : all["cases"]) (*by_name)[c["name"]] = c;
    }
    return by_name;
  }();
  return *cases;
}

at::Tensor ToTensor(const Json& json) {
  const auto data = json["data"].get<std::vector<double>>();
  const auto shape = json["shape"].get<std::vector<int64_t>>();
  return at::tensor(data, at::kDouble).view(shape).clone();
}

// max |actual − expected| / max |expected|.
double RelativeError(const at::Tensor& actual, const at::Tensor& expected) {
  return ((actual.to(at::kDouble) - expected).abs().max() /
          expected.abs().max().clamp_min(1e-30))
      .item<double>();
}

class KernelReferenceTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { ConfigureCpuParallelism({}); }

  void SetUp() override {
    ASSERT_TRUE(Cases().contains(GetParam()))
        << "no case " << GetParam() << " in " << CasesFile()
        << ": run this test through ctest, whose kernel_reference fixture "
           "writes it with tests/attention/kernel_reference.py";
    const Json& c = Cases()[GetParam()];
    auto kernel = ParseKernel(c["kernel"].get<std::string>());
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    options_.kernel = *kernel;
    options_.causal = c["causal"].get<bool>();
    options_.feature_epsilon = c["epsilon"].get<float>();
    q_ = ToTensor(c["query"]).to(at::kFloat);
    k_ = ToTensor(c["key"]).to(at::kFloat);
    v_ = ToTensor(c["value"]).to(at::kFloat);
    w_ = ToTensor(c["projection"]).to(at::kFloat);
    padding_ = ToTensor(c["padding"]).to(at::kBool);
    expected_ = ToTensor(c["expected"]);
    tolerance_ = GetParam().find("large") != std::string::npos ||
                         GetParam().find("1e3") != std::string::npos
                     ? kExtremeTolerance
                     : kTolerance;
  }

  // Attend with `options`, the error against the reference, printed.
  void ExpectAttendMatches(const AttentionOptions& options, const char* label) {
    auto out = Attend(q_, k_, v_, uses_projection() ? w_ : at::Tensor(),
                      padding_, options);
    ASSERT_TRUE(out.ok()) << out.status();
    const double error = RelativeError(*out, expected_);
    std::cout << GetParam() << " " << label << ": relative error " << error
              << " (tolerance " << tolerance_ << ")\n";
    EXPECT_LT(error, tolerance_) << label;
  }

  bool uses_projection() const {
    return TraitsOf(options_.kernel).uses_projection;
  }

  AttentionOptions options_;
  at::Tensor q_, k_, v_, w_, padding_, expected_;
  double tolerance_ = kTolerance;
};

TEST_P(KernelReferenceTest, AttendMatchesReference) {
  AttentionOptions small = options_;
  small.chunk_tokens = 4;
  small.causal_chunk_tokens = 3;
  small.exact_query_tile = 2;
  small.exact_key_tile = 4;
  ExpectAttendMatches(small, "small chunks");
  ExpectAttendMatches(options_, "default chunks");
}

// Each sequence packed without its padding, queries and kept keys only.
TEST_P(KernelReferenceTest, AttendPackedMatchesReference) {
  const int64_t batch = q_.size(0);
  std::vector<at::Tensor> qs, ks, vs;
  std::vector<int64_t> query_offsets = {0}, key_offsets = {0};
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t kept = padding_[b].logical_not().sum().item<int64_t>();
    // Causal attention needs as many queries as keys: a padded causal
    // sequence keeps only its first `kept` queries.
    const int64_t queries = options_.causal ? kept : q_.size(2);
    qs.push_back(q_[b].narrow(1, 0, queries).transpose(0, 1));
    ks.push_back(k_[b].narrow(1, 0, kept).transpose(0, 1));
    vs.push_back(v_[b].narrow(1, 0, kept).transpose(0, 1));
    query_offsets.push_back(query_offsets.back() + queries);
    key_offsets.push_back(key_offsets.back() + kept);
  }
  auto out = AttendPacked(at::cat(qs).contiguous(), at::cat(ks).contiguous(),
                          at::cat(vs).contiguous(), query_offsets, key_offsets,
                          uses_projection() ? w_ : at::Tensor(), options_);
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<at::Tensor> want;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t queries = query_offsets[b + 1] - query_offsets[b];
    want.push_back(expected_[b].narrow(1, 0, queries).transpose(0, 1));
  }
  const double error = RelativeError(*out, at::cat(want));
  std::cout << GetParam() << " packed: relative error " << error << "\n";
  EXPECT_LT(error, tolerance_);
}

// φ(q)ᵀφ(k) of FeatureMap's unshifted role (the estimator itself, ε = 0)
// against the paper's features.
using FeatureMapReferenceTest = KernelReferenceTest;

TEST_P(FeatureMapReferenceTest, GramMatchesReference) {
  const Json& c = Cases()[GetParam()];
  ASSERT_TRUE(c.contains("gram"));
  const Kernel kernel = options_.kernel;
  const at::Tensor w = uses_projection() ? w_ : at::Tensor();
  // FAVOR++'s A: the reference's A* for each (batch, head).
  const at::Tensor a = c.contains("favor_plus_plus_a")
                           ? ToTensor(c["favor_plus_plus_a"])
                           : at::Tensor();
  auto fq = FeatureMap(q_, kernel, w, FeatureRole::kUnshifted, 0.0f, a);
  auto fk = FeatureMap(k_, kernel, w, FeatureRole::kUnshifted, 0.0f, a);
  ASSERT_TRUE(fq.ok()) << fq.status();
  ASSERT_TRUE(fk.ok()) << fk.status();
  const at::Tensor gram =
      at::matmul(fq->to(at::kDouble), fk->to(at::kDouble).transpose(-1, -2));
  const double error = RelativeError(gram, ToTensor(c["gram"]));
  std::cout << GetParam() << " gram: relative error " << error << "\n";
  EXPECT_LT(error, kTolerance);
}

std::vector<std::string> CaseNames() {
  std::vector<std::string> names;
  for (const char* kernel : {"softmax", "favor+", "favor++", "hyperbolic",
                             "trig", "relu", "elu+1", "exp"}) {
    for (const char* causal : {"_noncausal", "_causal"}) {
      names.push_back(std::string(kernel) + causal);
    }
  }
  for (const char* causal : {"_noncausal", "_causal"}) {
    names.push_back(std::string("favor+") + causal + "_epsilon");
    names.push_back(std::string("relu") + causal + "_epsilon");
    names.push_back(std::string("softmax") + causal + "_large_logits");
    names.push_back(std::string("softmax") + causal + "_norms_1e3");
    names.push_back(std::string("favor+") + causal + "_norms_1e3");
  }
  return names;
}

std::string TestName(const testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (c == '+') c = 'p';
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(AllCases, KernelReferenceTest,
                         ::testing::ValuesIn(CaseNames()), TestName);

// The non-causal cases of the kernels with a feature map (all but softmax
// and Shen's exp, whose key features depend on the whole sequence).
std::vector<std::string> FeatureMapCaseNames() {
  std::vector<std::string> names;
  for (const char* kernel :
       {"favor+", "favor++", "hyperbolic", "trig", "relu", "elu+1"}) {
    names.push_back(std::string(kernel) + "_noncausal");
  }
  names.push_back("favor+_noncausal_norms_1e3");
  return names;
}

INSTANTIATE_TEST_SUITE_P(FeatureMapCases, FeatureMapReferenceTest,
                         ::testing::ValuesIn(FeatureMapCaseNames()), TestName);

}  // namespace
}  // namespace favor::attention
