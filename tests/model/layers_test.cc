// The encoder's per-token building blocks against their formulas
// (docs/models.md): rotary embeddings, ScaleNorm, the row-block loop.
#include "server/model/layers.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "server/attention/parallelism.h"
#include "gtest/gtest.h"

namespace favor::model::internal {
namespace {

// Rotate-half: pairs (i, i + d/2) rotate by p · base^(−2i/d), straight from
// the definition in double precision.
TEST(LayersTest, RotaryRotatesFeaturePairsByPositionTimesFrequency) {
  const int64_t rows = 5, heads = 3, d = 8;
  const double base = 100.0;
  const at::Tensor x = at::randn({rows, heads, d}, at::kFloat);
  const at::Tensor positions = at::tensor({0, 1, 2, 700000, 3}, at::kLong);
  const RotaryTables tables = MakeRotaryTables(positions, d, base);
  at::Tensor rotated = x.clone();
  ApplyRotaryInPlace(rotated, tables.cos, tables.sin);
  const auto in = x.accessor<float, 3>();
  const auto out = rotated.accessor<float, 3>();
  const auto p = positions.accessor<int64_t, 1>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < d / 2; ++i) {
        const double angle = p[r] * std::pow(base, -2.0 * i / d);
        const double a = in[r][h][i], b = in[r][h][i + d / 2];
        EXPECT_NEAR(out[r][h][i], a * std::cos(angle) - b * std::sin(angle),
                    1e-5);
        EXPECT_NEAR(out[r][h][i + d / 2],
                    b * std::cos(angle) + a * std::sin(angle), 1e-5);
      }
    }
  }
}

TEST(LayersTest, RotaryWritesThroughStridedViews) {
  // Queries and keys are column slices of the fused projection's output.
  at::Tensor qkv = at::randn({4, 3 * 8}, at::kFloat);
  const at::Tensor before = qkv.clone();
  const RotaryTables tables =
      MakeRotaryTables(at::arange(4, at::kLong), 4, 10000.0);
  ApplyRotaryInPlace(qkv.narrow(1, 0, 16).view({4, 4, 4}), tables.cos,
                     tables.sin);
  EXPECT_TRUE(at::equal(qkv.narrow(1, 16, 8), before.narrow(1, 16, 8)));
  EXPECT_TRUE(at::equal(qkv[0], before[0]));  // position 0: angle 0
  EXPECT_FALSE(at::equal(qkv[1], before[1]));
}

// Past its byte budget, RotaryAngles makes rows from angle parts: the same
// float32 values as the whole tables, up to a last-bit tie, at positions
// up to a million, and from any starting row.
TEST(LayersTest, RotaryRowsFromAnglePartsEqualTheWholeTables) {
  const at::Tensor positions =
      at::tensor({0, 1, 2, 1000, 999999, 1048575, 12345, 7}, at::kLong);
  const RotaryAngles whole(positions, 64, 10000.0, int64_t{1} << 30);
  const RotaryAngles parts(positions, 64, 10000.0, /*max_table_bytes=*/0);
  for (const auto& [begin, count] :
       {std::pair<int64_t, int64_t>{0, 8}, {2, 3}, {7, 1}}) {
    const RotaryTables want = whole.Rows(begin, count);
    const RotaryTables got = parts.Rows(begin, count);
    EXPECT_LE((got.cos - want.cos).abs().max().item<float>(), 2e-7);
    EXPECT_LE((got.sin - want.sin).abs().max().item<float>(), 2e-7);
  }
}

// Tables of positions [0, N) made once (the encoder's): rows gathered
// from them are the bits computed for the batch's own positions; a batch
// with a position past N computes its own.
TEST(LayersTest, RotaryRowsFromTheFirstPositionsAreTheComputedBits) {
  const RotaryTables first =
      MakeRotaryTables(at::arange(100, at::kLong), 64, 10000.0);
  for (const at::Tensor& positions :
       {at::tensor({0, 1, 2, 0, 1, 99, 50, 7}, at::kLong),
        at::tensor({3, 4, 100, 5}, at::kLong)}) {
    const RotaryAngles computed(positions, 64, 10000.0, int64_t{1} << 30);
    const RotaryAngles gathered(positions, 64, 10000.0, int64_t{1} << 30,
                                &first);
    const RotaryTables want = computed.Rows(0, positions.size(0));
    const RotaryTables got = gathered.Rows(0, positions.size(0));
    EXPECT_TRUE(at::equal(got.cos, want.cos)) << positions;
    EXPECT_TRUE(at::equal(got.sin, want.sin)) << positions;
  }
}

TEST(LayersTest, ScaleNormIsScaleTimesUnitVector) {
  Norm norm;
  norm.type = NormType::kScaleNorm;
  norm.scale = at::tensor({2.5f});
  norm.eps = 1e-5;
  const at::Tensor x = at::tensor({3.0f, 4.0f, 0.0f, 0.0f}).view({2, 2});
  const at::Tensor y = norm(x);
  EXPECT_NEAR(y[0][0].item<float>(), 1.5f, 1e-6);
  EXPECT_NEAR(y[0][1].item<float>(), 2.0f, 1e-6);
  EXPECT_EQ(y[1][0].item<float>(), 0.0f);  // ‖x‖ floored at eps: no NaN
}

TEST(LayersTest, LayerNormUsesWeightBiasAndEps) {
  Norm norm;
  norm.weight = at::tensor({2.0f, 1.0f});
  norm.bias = at::tensor({0.5f, -0.5f});
  norm.eps = 0.0;
  const at::Tensor y = norm(at::tensor({1.0f, 3.0f}).view({1, 2}));
  EXPECT_NEAR(y[0][0].item<float>(), -1.5f, 1e-6);  // 2·(−1) + 0.5
  EXPECT_NEAR(y[0][1].item<float>(), 0.5f, 1e-6);   // 1·(+1) − 0.5
}

TEST(LayersTest, RowBlocksCoverEveryRowOnce) {
  for (const bool parallel : {false, true}) {
    std::vector<std::atomic<int>> seen(103);
    ForEachRowBlock(103, 10, parallel, [&](int64_t begin, int64_t end) {
      EXPECT_LE(end - begin, 10);
      for (int64_t r = begin; r < end; ++r) seen[r]++;
    });
    for (const auto& count : seen) EXPECT_EQ(count.load(), 1);
  }
}

// A batch smaller than a block per thread is cut so that every thread has
// rows, in blocks of at least kMinParallelBlockRows; run in order (not
// parallel) the blocks stay whole.
TEST(LayersTest, ASmallBatchIsCutSoThatEveryThreadHasRows) {
  const auto blocks = [](int64_t rows, int64_t block_rows, bool parallel) {
    absl::Mutex mu;
    std::vector<std::pair<int64_t, int64_t>> seen;
    ForEachRowBlock(rows, block_rows, parallel, [&](int64_t b, int64_t e) {
      absl::MutexLock lock(&mu);
      seen.push_back({b, e});
    });
    std::sort(seen.begin(), seen.end());
    return seen;
  };
  using Blocks = std::vector<std::pair<int64_t, int64_t>>;
  // As favor-server configures them (one per core: 2 on the CI machine,
  // and at least 2 here).
  const int threads = std::max(
      2, attention::ConfigureCpuParallelism(attention::CpuParallelismOptions{}));
  at::set_num_threads(threads);
  const int64_t rows = 100 * threads;
  Blocks expected;
  for (int t = 0; t < threads; ++t) expected.push_back({100 * t, 100 * t + 100});
  EXPECT_EQ(blocks(rows, 256, true), expected);
  Blocks in_order;  // whole blocks of block_rows, the last one short
  for (int64_t b = 0; b < rows; b += 256) {
    in_order.push_back({b, std::min<int64_t>(b + 256, rows)});
  }
  EXPECT_EQ(blocks(rows, 256, false), in_order);
  // Never below 32 rows a block, nor above block_rows.
  const Blocks forty = threads > 1 ? Blocks{{0, 32}, {32, 40}}
                                   : Blocks{{0, 40}};
  EXPECT_EQ(blocks(40, 256, true), forty);
  EXPECT_EQ(blocks(20, 256, true), (Blocks{{0, 20}}));
  EXPECT_EQ(blocks(1000 * threads, 256, true).front(),
            (std::pair<int64_t, int64_t>{0, 256}));
}

TEST(LayersTest, LinearColumnsAreAViewOfTheFusedLayer) {
  const Linear fused{at::randn({3, 6}), at::randn({6})};
  const Linear middle = fused.Columns(2, 2);
  const at::Tensor x = at::randn({4, 3});
  EXPECT_TRUE(at::allclose(middle(x), fused(x).narrow(1, 2, 2)));
  EXPECT_EQ(middle.weight_t.data_ptr<float>(),
            fused.weight_t.data_ptr<float>() + 2);
}

// activation(x Wᵀ + b) in one call, against LibTorch's product and
// activation: the GELU on the AVX-512 tiles' registers (erf form, within
// about an ulp), the others through ActivateInPlace; packed or not, and in
// rows that do not fill the tiles.
TEST(LayersTest, ActivatedIsTheActivationOfTheProduct) {
  at::manual_seed(4);
  Linear layer{at::randn({64, 200}) * 0.3, at::randn({200})};
  for (bool packed : {false, true}) {
    if (packed) layer.PackForTiles();
    for (int64_t rows : {1, 7, 256}) {
      const at::Tensor x = at::randn({rows, 64});
      const at::Tensor product =
          at::addmm(layer.bias, x, layer.weight_t).to(at::kDouble);
      const at::Tensor erf_gelu =
          0.5 * product * (1 + at::erf(product / std::sqrt(2.0)));
      EXPECT_LT((layer.Activated(x, Activation::kGelu).to(at::kDouble) -
                 erf_gelu)
                    .abs()
                    .max()
                    .item<double>(),
                1e-5)
          << rows << " rows" << (packed ? ", packed" : "");
      for (Activation other :
           {Activation::kGeluTanh, Activation::kRelu, Activation::kSilu}) {
        at::Tensor want = layer(x);
        ActivateInPlace(other, want);
        EXPECT_TRUE(at::equal(layer.Activated(x, other), want))
            << NameOf(other) << ", " << rows << " rows";
      }
    }
  }
}

// int8 (ComputeDType kInt8): the products run on cpu::GemmInt8, near the
// float32 ones; a part sliced at a multiple of 8 columns (as the fused
// query|key|value layer's parts and head groups are) stays in int8 and
// gives the same bits as those columns of the whole product, in every
// entry point (a new output, into a view, added to a residual).
TEST(LayersTest, Int8ColumnsAreTheSameBitsAsTheWholeProduct) {
  at::manual_seed(3);
  Linear fused{at::randn({70, 96}) * 0.1, at::randn({96})};
  const at::Tensor x = at::randn({13, 70});
  const at::Tensor float32 = fused(x);
  fused.QuantizeInt8();
  ASSERT_TRUE(fused.int8_weight.defined());
  EXPECT_FALSE(fused.packed.defined());
  const at::Tensor whole = fused(x);
  EXPECT_FALSE(at::equal(whole, float32)) << "the product did not run in int8";
  EXPECT_LT((whole - float32).norm().item<double>(),
            0.02 * float32.norm().item<double>());
  for (const auto& [begin, count] :
       {std::pair<int64_t, int64_t>{0, 96}, {8, 40}, {32, 64}, {88, 8},
        {40, 3}}) {
    const Linear part = fused.Columns(begin, count);
    ASSERT_TRUE(part.int8_weight.defined()) << begin;
    const at::Tensor want = whole.narrow(1, begin, count);
    EXPECT_TRUE(at::equal(part(x), want)) << begin << "+" << count;
    at::Tensor into = at::empty({13, count});
    part.Into(x, into);
    EXPECT_TRUE(at::equal(into, want)) << begin << "+" << count;
    const at::Tensor residual = at::randn({13, count});
    at::Tensor sum = residual.clone();
    part.AddInto(x, sum);
    EXPECT_TRUE(at::allclose(sum, residual + want, 1e-6, 1e-6))
        << begin << "+" << count;
  }
  // Inside a panel: no int8 slice; the product runs in float32.
  const Linear odd = fused.Columns(4, 8);
  EXPECT_FALSE(odd.int8_weight.defined());
  EXPECT_TRUE(at::allclose(odd(x), float32.narrow(1, 4, 8), 1e-5, 1e-5));
}

}  // namespace
}  // namespace favor::model::internal
