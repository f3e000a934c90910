#include "server/attention/projection.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>

namespace favor::attention {
namespace {

at::Tensor Draw(const ProjectionOptions& options) {
  auto projection = DrawProjection(options);
  EXPECT_TRUE(projection.ok()) << projection.status();
  return *projection;
}

TEST(ProjectionTest, OrthogonalBlocksHaveOrthogonalRows) {
  ProjectionOptions options;
  options.num_features = 160;  // two full 64-row blocks and a partial one
  options.head_dim = 64;
  options.row_norm = ProjectionOptions::RowNorm::kSqrtDim;
  const at::Tensor w = Draw(options).to(at::kDouble);
  ASSERT_EQ(w.sizes(), (at::IntArrayRef{160, 64}));
  for (int64_t begin : {0, 64, 128}) {
    const int64_t rows = std::min<int64_t>(64, 160 - begin);
    const at::Tensor block = w.narrow(0, begin, rows);
    const at::Tensor gram = at::mm(block, block.t());
    // Rows have norm √d exactly (up to float rounding), so the Gram matrix
    // is d·I.
    EXPECT_TRUE(at::allclose(gram, 64.0 * at::eye(rows, at::kDouble), 0, 1e-3))
        << "block at row " << begin;
  }
}

TEST(ProjectionTest, ChiNormsLookLikeGaussianRowNorms) {
  ProjectionOptions options;
  options.num_features = 4096;
  options.head_dim = 64;
  const at::Tensor norms = Draw(options).norm(2, {1});
  // χ(64): mean ≈ 7.979, standard deviation ≈ 0.706; 4096 rows give a
  // standard error of 0.011 for the mean.
  EXPECT_NEAR(norms.mean().item<double>(), 7.979, 0.06);
  EXPECT_NEAR(norms.std().item<double>(), 0.706, 0.05);
}

// The same (seed, draw index) gives the same matrix; another index or seed
// another one.
void ExpectSeedAndDrawDetermineTheMatrix(const ProjectionOptions& options) {
  const at::Tensor a = Draw(options);
  EXPECT_TRUE(at::equal(a, Draw(options)));
  ProjectionOptions redraw = options;
  redraw.draw_index = options.draw_index + 1;
  EXPECT_FALSE(at::allclose(a, Draw(redraw)));
  ProjectionOptions other_seed = options;
  other_seed.seed = options.seed + 1;
  EXPECT_FALSE(at::allclose(a, Draw(other_seed)));
}

TEST(ProjectionTest, SameSeedSameMatrixOtherSeedOrDrawOtherMatrix) {
  ProjectionOptions options;
  options.num_features = 32;
  options.head_dim = 16;
  options.seed = 1234;
  ExpectSeedAndDrawDetermineTheMatrix(options);
}

// Golden values: the matrix for a seed must not change across machines,
// compilers or LibTorch versions (models store only their seed).
TEST(ProjectionTest, GoldenValuesForSeed) {
  ProjectionOptions options;
  options.num_features = 4;
  options.head_dim = 4;
  options.seed = 7;
  const at::Tensor orthogonal = Draw(options);
  options.orthogonal = false;
  const at::Tensor iid = Draw(options);
  const float* o = orthogonal.data_ptr<float>();
  const float* g = iid.data_ptr<float>();
  // Computed by an independent Python transcription of the algorithm
  // (Philox4x32-10, Box–Muller in double, modified Gram–Schmidt, χ norms).
  const float kOrthogonal[4] = {0.000300378946f, -0.314059377f, 1.84281301f,
                                1.10014319f};
  const float kIid[4] = {0.000291567849f, -0.304846972f, 1.78875732f,
                         1.06787252f};
  for (int i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(o[i], kOrthogonal[i]) << i;
    EXPECT_FLOAT_EQ(g[i], kIid[i]) << i;
  }
}

// Sum and index-weighted sum of all entries, in double, in row-major order:
// golden values of the whole matrix, as projection_reference.py computes
// them.
std::pair<double, double> Checksums(const at::Tensor& w) {
  const float* data = w.data_ptr<float>();
  double plain = 0, weighted = 0;
  for (int64_t k = 0; k < w.numel(); ++k) {
    plain += data[k];
    weighted += static_cast<double>(data[k]) * static_cast<double>(k % 97 + 1);
  }
  return {plain, weighted};
}

ProjectionOptions Options(int64_t m, int64_t d, uint64_t seed,
                          const char* coupling) {
  ProjectionOptions options;
  options.num_features = m;
  options.head_dim = d;
  options.seed = seed;
  options.orthogonal = std::string(coupling) != "iid";
  options.simplex = std::string(coupling) == "simplex";
  return options;
}

// Every entry of the matrix for a seed is pinned (models store only their
// seed): checksums of whole matrices with full and partial blocks, for every
// coupling, from tests/attention/projection_reference.py (an independent
// transcription); the entries summed in double in one order reproduce
// exactly, so only rounding of the printed digits is allowed for.
TEST(ProjectionTest, GoldenChecksumsOfWholeMatrices) {
  struct Golden {
    int64_t m, d;
    uint64_t seed;
    const char* coupling;
    double sum, weighted;
  };
  const Golden goldens[] = {
      {160, 64, 7, "orthogonal", 65.60542281948437, 134.23129642591812},
      {5, 4, 3, "orthogonal", -2.815843041986227, -10.864168010652065},
      {160, 64, 7, "iid", -135.02606844301408, -9726.771022052086},
      {5, 4, 3, "iid", -5.428601861000061, -58.66267730295658},
      {160, 64, 7, "simplex", 37.42660684187558, -1206.8571680882933},
      {5, 4, 3, "simplex", 0.4531036540865898, 25.242703177034855},
  };
  for (const Golden& g : goldens) {
    const auto [sum, weighted] =
        Checksums(Draw(Options(g.m, g.d, g.seed, g.coupling)));
    EXPECT_DOUBLE_EQ(sum, g.sum) << g.coupling << " " << g.m << "x" << g.d;
    EXPECT_DOUBLE_EQ(weighted, g.weighted)
        << g.coupling << " " << g.m << "x" << g.d;
  }
}

TEST(ProjectionTest, GoldenSimplexEntries) {
  const at::Tensor w = Draw(Options(5, 4, 3, "simplex"));
  const float kEntries[20] = {
      0.3235895335674286f,  0.3898034989833832f,   0.5602777004241943f,
      -0.6564649939537048f, -1.7136541604995728f,  -0.5520175695419312f,
      -0.3518718183040619f, -0.5058387517929077f,  1.3667078018188477f,
      -1.9328221082687378f, -0.13625288009643555f, 0.66047602891922f,
      0.05140290409326553f, 1.606224536895752f,    -0.7484631538391113f,
      1.530396819114685f,   1.4889293909072876f,   -0.1604643315076828f,
      -0.5745137929916382f, -0.19234099984169006f};
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(w.data_ptr<float>()[i], kEntries[i]) << i;
  }
}

// Within each block of d rows the directions form a regular simplex: unit
// directions with pairwise cosines −1/(d − 1) (arccos(−1/63) ≈ 90.9° for
// d = 64), summing to zero; the last block is a part of one.
TEST(ProjectionTest, SimplexBlocksHaveRegularSimplexAngles) {
  const at::Tensor w = Draw(Options(160, 64, 21, "simplex")).to(at::kDouble);
  const at::Tensor directions = w / w.norm(2, {1}, true);
  for (int64_t begin : {0, 64, 128}) {
    const int64_t rows = std::min<int64_t>(64, 160 - begin);
    const at::Tensor block = directions.narrow(0, begin, rows);
    const at::Tensor want =
        at::full({rows, rows}, -1.0 / 63.0, at::kDouble).fill_diagonal_(1.0);
    EXPECT_TRUE(at::allclose(at::mm(block, block.t()), want, 0, 1e-6))
        << "block at row " << begin;
    if (rows == 64) {
      EXPECT_LT(block.sum(0).abs().max().item<double>(), 1e-6);
    }
  }
  // Blocks are rotated independently: two blocks are not the same simplex.
  EXPECT_GT((directions.narrow(0, 0, 32) - directions.narrow(0, 64, 32))
                .abs()
                .max()
                .item<double>(),
            0.1);
}

TEST(ProjectionTest, SimplexChiNormsLookLikeGaussianRowNorms) {
  const at::Tensor norms = Draw(Options(4096, 64, 0, "simplex")).norm(2, {1});
  // As ChiNormsLookLikeGaussianRowNorms: χ(64) has mean 7.979 and standard
  // deviation 0.706; 4096 rows pin them to about 0.011 and 0.008.
  EXPECT_NEAR(norms.mean().item<double>(), 7.979, 0.06);
  EXPECT_NEAR(norms.std().item<double>(), 0.706, 0.05);
  ProjectionOptions fixed = Options(64, 64, 0, "simplex");
  fixed.row_norm = ProjectionOptions::RowNorm::kSqrtDim;
  EXPECT_TRUE(
      at::allclose(Draw(fixed).norm(2, {1}), at::full({64}, 8.0f), 0, 1e-5));
}

TEST(ProjectionTest, SimplexIsDeterministicFromTheSeed) {
  ExpectSeedAndDrawDetermineTheMatrix(Options(96, 32, 1234, "simplex"));
}

TEST(ProjectionTest, RejectsSimplexWithoutBlocks) {
  ProjectionOptions options = Options(8, 8, 0, "simplex");
  options.orthogonal = false;
  EXPECT_EQ(DrawProjection(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DrawProjection(Options(8, 1, 0, "simplex")).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ProjectionTest, RejectsBadSizes) {
  ProjectionOptions options;
  options.num_features = 0;
  EXPECT_EQ(DrawProjection(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.num_features = 8;
  options.head_dim = 0;
  EXPECT_EQ(DrawProjection(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace favor::attention
