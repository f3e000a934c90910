#include "server/attention/feature_map.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "server/attention/projection.h"

namespace favor::attention {
namespace {

constexpr int64_t kDim = 16;
// Inputs of norm about 0.4·√d: ‖x'‖² = ‖x‖²/√d ≈ 0.64, where the
// estimators' variance (which grows like exp(‖q' + k'‖²)) is moderate, so a
// few hundred draws pin the statistics down.
constexpr double kScale = 0.4;

at::Tensor Projection(int64_t m, uint64_t seed, bool orthogonal) {
  ProjectionOptions options;
  options.num_features = m;
  options.head_dim = kDim;
  options.seed = seed;
  options.orthogonal = orthogonal;
  return *DrawProjection(options);
}

// φ(q)ᵀφ(k) for every (q, k) pair of the two sets, unshifted, ε = 0.
at::Tensor Estimate(Kernel kernel, const at::Tensor& q, const at::Tensor& k,
                    const at::Tensor& w) {
  auto fq = FeatureMap(q, kernel, w, FeatureRole::kUnshifted, 0.0f);
  auto fk = FeatureMap(k, kernel, w, FeatureRole::kUnshifted, 0.0f);
  EXPECT_TRUE(fq.ok() && fk.ok());
  return (*fq * *fk).sum(-1);
}

class FixedPairs : public testing::Test {
 protected:
  void SetUp() override {
    at::manual_seed(3);
    q_ = at::randn({32, kDim}, at::kDouble).to(at::kFloat) * kScale;
    k_ = at::randn({32, kDim}, at::kDouble).to(at::kFloat) * kScale;
    exact_ = at::exp((q_ * k_).sum(-1) / std::sqrt(double{kDim}));
  }
  // Mean squared error of the estimate over `draws` projections.
  double MeanSquaredError(Kernel kernel, int64_t m, bool orthogonal,
                          int draws) {
    double total = 0;
    for (int s = 0; s < draws; ++s) {
      const at::Tensor est =
          Estimate(kernel, q_, k_, Projection(m, s, orthogonal));
      total += (est - exact_).square().mean().item<double>();
    }
    return total / draws;
  }
  at::Tensor q_, k_, exact_;
};

// Unbiased: averaging over seeds converges to exp(qᵀk/√d). With 400 draws
// of m = 64 features the mean's relative error is a few percent at most
// over the 32 pairs; a bias (a wrong scale, a missing ‖x'‖² term) would be
// tens of percent.
TEST_F(FixedPairs, PositiveAndHyperbolicAndTrigAreUnbiased) {
  for (Kernel kernel : {Kernel::kFavorPositive, Kernel::kFavorHyperbolic,
                        Kernel::kTrigonometric}) {
    at::Tensor mean = at::zeros_like(exact_);
    const int draws = 400;
    for (int s = 0; s < draws; ++s) {
      mean += Estimate(kernel, q_, k_, Projection(64, 1000 + s, false));
    }
    mean /= draws;
    const double relative =
        ((mean - exact_).abs() / exact_).max().item<double>();
    EXPECT_LT(relative, 0.06) << KernelName(kernel);
  }
}

// The error variance of these estimators is proportional to 1/m: going from
// m = 16 to m = 128 should cut the MSE by about 8; we ask for at least 5.
TEST_F(FixedPairs, MeanSquaredErrorFallsAsOneOverM) {
  const double mse16 = MeanSquaredError(Kernel::kFavorPositive, 16, false, 100);
  const double mse128 =
      MeanSquaredError(Kernel::kFavorPositive, 128, false, 100);
  EXPECT_GT(mse16 / mse128, 5.0) << mse16 << " vs " << mse128;
  EXPECT_LT(mse16 / mse128, 12.0) << mse16 << " vs " << mse128;
}

// The Performer paper's claim (Theorem 2): orthogonal features lower the
// MSE at the same m. With m = d = 16 the gain here is about 1.5x; averaged
// over 200 draws, the estimate of each MSE is within about 10%.
TEST_F(FixedPairs, OrthogonalFeaturesBeatIid) {
  const double iid = MeanSquaredError(Kernel::kFavorPositive, 16, false, 200);
  const double ortho = MeanSquaredError(Kernel::kFavorPositive, 16, true, 200);
  EXPECT_LT(ortho, 0.9 * iid) << ortho << " vs " << iid;
}

TEST(FeatureMapTest, PositiveFeaturesAreNeverNegativeAndFiniteForHugeInputs) {
  at::manual_seed(5);
  const at::Tensor w = Projection(64, 1, true);
  const at::Tensor x = at::randn({2, 50, kDim}) * 1000;  // ‖x‖ ≈ 4000
  for (Kernel kernel : {Kernel::kFavorPositive, Kernel::kFavorHyperbolic,
                        Kernel::kRelu, Kernel::kEluPlusOne, Kernel::kExp}) {
    for (FeatureRole role : {FeatureRole::kQuery, FeatureRole::kKey}) {
      auto features = FeatureMap(x, kernel, w, role, 1e-4f);
      ASSERT_TRUE(features.ok()) << features.status();
      EXPECT_TRUE(at::isfinite(*features).all().item<bool>())
          << KernelName(kernel);
      EXPECT_TRUE((*features >= 0).all().item<bool>()) << KernelName(kernel);
      if (TraitsOf(kernel).adds_epsilon) {
        // ε keeps every feature, hence every denominator, above zero.
        EXPECT_TRUE((*features > 0).all().item<bool>()) << KernelName(kernel);
      }
    }
  }
}

TEST(FeatureMapTest, TrigFeaturesDoGoNegative) {
  at::manual_seed(6);
  auto features = FeatureMap(at::randn({100, kDim}), Kernel::kTrigonometric,
                             Projection(64, 2, true), FeatureRole::kQuery, 0);
  ASSERT_TRUE(features.ok());
  EXPECT_TRUE((*features < 0).any().item<bool>());
}

TEST(FeatureMapTest, ErrorsNameTheProblem) {
  const at::Tensor x = at::randn({4, kDim});
  EXPECT_EQ(FeatureMap(x, Kernel::kFavorPositive, at::Tensor(),
                       FeatureRole::kQuery, 0)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  auto mismatch = FeatureMap(x, Kernel::kFavorPositive, at::randn({8, 5}),
                             FeatureRole::kQuery, 0);
  EXPECT_EQ(mismatch.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mismatch.status().message().find("(m, d)"), std::string::npos);
  EXPECT_EQ(
      FeatureMap(x, Kernel::kSoftmaxExact, at::Tensor(), FeatureRole::kQuery, 0)
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace favor::attention
