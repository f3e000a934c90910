#include "server/attention/projection.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

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

// FNV-1a 64 of every entry's float32 bits, row-major, little-endian: a
// digest that changes with any bit of any entry.
uint64_t Digest(const at::Tensor& w) {
  uint64_t hash = 0xCBF29CE484222325ull;
  const float* data = w.data_ptr<float>();
  for (int64_t k = 0; k < w.numel(); ++k) {
    uint32_t bits;
    std::memcpy(&bits, &data[k], sizeof bits);
    for (int byte = 0; byte < 4; ++byte) {
      hash = (hash ^ ((bits >> (8 * byte)) & 0xFF)) * 0x100000001B3ull;
    }
  }
  return hash;
}

struct Spot {
  int64_t row, col;
  float value;
};

struct GoldenMatrix {
  const char* coupling;
  ProjectionOptions::RowNorm row_norm;
  int64_t m, d;
  uint64_t seed, draw_index;
  uint64_t digest;
  Spot spots[8];  // first, second-block, middle and last rows, both ends
};

constexpr auto kChi = ProjectionOptions::RowNorm::kChi;
constexpr auto kSqrtDim = ProjectionOptions::RowNorm::kSqrtDim;

// Whole matrices, bit for bit (models store only their seed): several
// seeds and draw indices, m not a multiple of d, orthogonal with χ and √d
// norms, iid and simplex. Printed, in this form, by
// tests/attention/projection_reference.py (an independent transcription of
// the generator); the attention_projection_reference test checks that the
// script still prints exactly these lines.
// clang-format off
const GoldenMatrix kGoldenMatrices[] = {
    {"orthogonal", kChi, 160, 64, 7, 0, 0x4ba8b98f29a358dcull, {{0, 0, 0.00020229537039995193f}, {0, 63, 0.04932370036840439f}, {64, 0, 0.5836952328681946f}, {64, 63, -0.45136868953704834f}, {80, 0, -0.21105903387069702f}, {80, 63, -0.32233819365501404f}, {159, 0, -1.044987678527832f}, {159, 63, 0.31007763743400574f}}},
    {"orthogonal", kChi, 100, 16, 3, 0, 0x77c914c1f9978b34ull, {{0, 0, 0.537013828754425f}, {0, 15, -0.9962586760520935f}, {16, 0, 1.4605159759521484f}, {16, 15, 0.9856699705123901f}, {50, 0, 1.5641111135482788f}, {50, 15, 0.348956823348999f}, {99, 0, 1.721209168434143f}, {99, 15, 1.8205976486206055f}}},
    {"orthogonal", kChi, 37, 8, 12345, 0, 0xf7fad8d298d6ee1full, {{0, 0, 0.2191798985004425f}, {0, 7, -0.33377084136009216f}, {8, 0, 0.9874691963195801f}, {8, 7, -1.0738093852996826f}, {18, 0, -1.334998369216919f}, {18, 7, -0.8585546016693115f}, {36, 0, 2.2880475521087646f}, {36, 7, 0.8687258362770081f}}},
    {"orthogonal", kChi, 100, 16, 3, 1, 0xb2e1969e81f052a7ull, {{0, 0, -2.938436269760132f}, {0, 15, -1.5557701587677002f}, {16, 0, 1.5990372896194458f}, {16, 15, 1.871338963508606f}, {50, 0, 1.3623846769332886f}, {50, 15, 2.451744794845581f}, {99, 0, 0.7249935269355774f}, {99, 15, 1.7179300785064697f}}},
    {"orthogonal", kSqrtDim, 160, 64, 7, 0, 0x78d428c775f854d6ull, {{0, 0, 0.0002421536046313122f}, {0, 63, 0.05904194712638855f}, {64, 0, 0.5772966146469116f}, {64, 63, -0.44642066955566406f}, {80, 0, -0.18640092015266418f}, {80, 63, -0.2846792936325073f}, {159, 0, -1.1422604322433472f}, {159, 63, 0.33894121646881104f}}},
    {"orthogonal", kSqrtDim, 100, 16, 3, 0, 0xf4f551c103267e12ull, {{0, 0, 0.5342507362365723f}, {0, 15, -0.9911325573921204f}, {16, 0, 1.7133723497390747f}, {16, 15, 1.156317114830017f}, {50, 0, 2.105512857437134f}, {50, 15, 0.46974480152130127f}, {99, 0, 1.2706605195999146f}, {99, 15, 1.3440327644348145f}}},
    {"iid", kChi, 160, 64, 7, 0, 0xfb09b6963193dfc7ull, {{0, 0, 0.0002915678487624973f}, {0, 63, 0.07109013944864273f}, {64, 0, -0.2683502435684204f}, {64, 63, 1.041900396347046f}, {80, 0, -0.2786684036254883f}, {80, 63, 1.2006032466888428f}, {159, 0, -0.3888704180717468f}, {159, 63, 0.925388753414154f}}},
    {"iid", kChi, 100, 16, 3, 0, 0x12e59ea32299a68dull, {{0, 0, 0.4725540280342102f}, {0, 15, -0.8766739964485168f}, {16, 0, 1.0396627187728882f}, {16, 15, -0.6548709273338318f}, {50, 0, 1.6174992322921753f}, {50, 15, -0.04199613630771637f}, {99, 0, -0.8758785724639893f}, {99, 15, 0.783551812171936f}}},
    {"simplex", kChi, 100, 16, 3, 0, 0x8012ac1c381cf2ebull, {{0, 0, 0.016023945063352585f}, {0, 15, -0.7544403672218323f}, {16, 0, 1.532783031463623f}, {16, 15, 0.8661589622497559f}, {50, 0, 1.6070829629898071f}, {50, 15, 0.33285456895828247f}, {99, 0, 1.7945985794067383f}, {99, 15, 1.8700807094573975f}}},
    {"simplex", kSqrtDim, 37, 8, 12345, 0, 0xc4d98ee6d3746499ull, {{0, 0, 0.5578799843788147f}, {0, 7, -0.529464840888977f}, {8, 0, 1.3386449813842773f}, {8, 7, -1.701130747795105f}, {18, 0, -1.6915373802185059f}, {18, 7, -0.6909623146057129f}, {36, 0, 2.0408756732940674f}, {36, 7, 1.0372223854064941f}}},
};
// clang-format on

TEST(ProjectionTest, GoldenDigestsOfWholeMatrices) {
  for (const GoldenMatrix& g : kGoldenMatrices) {
    ProjectionOptions options = Options(g.m, g.d, g.seed, g.coupling);
    options.row_norm = g.row_norm;
    options.draw_index = g.draw_index;
    const at::Tensor w = Draw(options);
    const std::string label =
        absl::StrCat(g.coupling, " ", g.m, "x", g.d, " seed ", g.seed, " draw ",
                     g.draw_index, g.row_norm == kChi ? " chi" : " sqrt(d)");
    EXPECT_EQ(Digest(w), g.digest) << label;
    for (const Spot& spot : g.spots) {
      EXPECT_EQ(w[spot.row][spot.col].item<float>(), spot.value)
          << label << " entry (" << spot.row << ", " << spot.col << ")";
    }
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
