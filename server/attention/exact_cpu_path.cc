#include "server/attention/exact_cpu_path.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "server/attention/cpu_gemm.h"
#include "server/attention/cpu_kernels.h"
#include "server/attention/favor_cpu_steps.h"

namespace favor::attention {
namespace {

using favor_cpu::MatMul;
using favor_cpu::PackedForAvx2;
using favor_cpu::PackedProduct;
using favor_cpu::ProductsOnGemm;
using favor_cpu::ProductsOnPackedAvx2;
using favor_cpu::Scratch;
using favor_cpu::ScratchSlot;

// Keys per block: a block's scores for a 128-query tile (128 KiB) stay in
// the L2 cache from the product that makes them to the one that uses them.
constexpr int64_t kKeyBlock = 256;

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

// c (+)= a · b on the tiles: b read in place on AVX-512, packed into the
// thread's `packed` slot first on AVX2.
void Product(int64_t rows, int64_t cols, int64_t depth, cpu::MatrixView a,
             const float* b, int64_t ldb, float* c, int64_t ldc,
             bool accumulate, ScratchSlot packed) {
  if (ProductsOnPackedAvx2()) {
    PackedProduct(rows, cols, depth, a,
                  PackedForAvx2(packed, depth, cols, b, ldb), c, ldc,
                  accumulate);
    return;
  }
  MatMul(rows, cols, depth, a, b, ldb, c, ldc, accumulate);
}

// −∞ in row `key` (absolute index) of a block of scores wherever the key is
// hidden from a query of the tile [q_begin, q_begin + queries): the padding
// mask (`keep`, null: all kept), causal order and the window.
void MaskRow(float* row, int64_t key, int64_t q_begin, int64_t queries,
             const bool* keep, const AttentionOptions& options) {
  int64_t lo = 0, hi = queries;  // the queries that see the key
  if (keep != nullptr && !keep[key]) hi = 0;
  if (options.causal) lo = std::max(lo, key - q_begin);
  if (options.window_radius >= 0) {
    lo = std::max(lo, key - options.window_radius - q_begin);
    hi = std::min(hi, key + options.window_radius - q_begin + 1);
  }
  if (lo >= hi) {
    std::fill(row, row + queries, kMinusInf);
    return;
  }
  std::fill(row, row + lo, kMinusInf);
  std::fill(row + hi, row + queries, kMinusInf);
}

}  // namespace

bool ExactCpuPathApplies(const HeadGroup& group) {
  const auto float32_rows = [](const at::Tensor& t) {
    return t.scalar_type() == at::kFloat && t.dim() == 3 && t.stride(2) == 1;
  };
  return group.query.device().is_cpu() && float32_rows(group.query) &&
         float32_rows(group.key) && float32_rows(group.value) &&
         float32_rows(group.out) &&
         (!group.keep.defined() || group.keep.device().is_cpu()) &&
         (ProductsOnGemm() || ProductsOnPackedAvx2());
}

void ExactQueryTileCpu(const HeadGroup& group, const AttentionOptions& options,
                       int64_t q_begin, int64_t q_end) {
  const int64_t heads = group.query.size(0);
  const int64_t d = group.query.size(2), dv = group.value.size(2);
  const int64_t queries = q_end - q_begin;
  const int64_t key_length = group.key.size(1);
  // Only the keys some query of the tile sees.
  int64_t key_stop = options.causal ? std::min(key_length, q_end) : key_length;
  int64_t key_start = 0;
  if (options.window_radius >= 0) {
    key_start = std::max<int64_t>(0, q_begin - options.window_radius);
    key_stop = std::min(key_stop, q_end + options.window_radius);
  }
  const int64_t block =
      std::clamp<int64_t>(options.exact_key_tile, 1, kKeyBlock);
  const float scale =
      static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  const at::Tensor keep =
      group.keep.defined() ? group.keep.contiguous() : at::Tensor();

  float* const queries_t = Scratch(ScratchSlot::kExactQueries, d, queries);
  float* const scores = Scratch(ScratchSlot::kExactScores, block, queries);
  float* const outputs = Scratch(ScratchSlot::kExactOutputs, queries, dv);
  // Per query: the running maximum and sum, and a block's correction and
  // shift.
  std::vector<float> columns(4 * queries);
  float* const column_max = columns.data();
  float* const column_sum = column_max + queries;
  float* const correction = column_sum + queries;
  float* const shift = correction + queries;

  for (int64_t g = 0; g < heads; ++g) {
    const float* q = group.query.data_ptr<float>() + g * group.query.stride(0) +
                     q_begin * group.query.stride(1);
    const int64_t q_stride = group.query.stride(1);
    // The tile's queries as the first product's right-hand operand (d ×
    // queries), scaled by 1/√d as they are copied.
    for (int64_t i = 0; i < queries; ++i) {
      for (int64_t c = 0; c < d; ++c) {
        queries_t[c * queries + i] = q[i * q_stride + c] * scale;
      }
    }
    std::fill(column_max, column_max + queries, kMinusInf);
    std::fill(column_sum, column_sum + queries, 0.0f);
    std::fill(outputs, outputs + queries * dv, 0.0f);
    const float* k = group.key.data_ptr<float>() + g * group.key.stride(0);
    const float* v = group.value.data_ptr<float>() + g * group.value.stride(0);
    const int64_t k_stride = group.key.stride(1);
    const int64_t v_stride = group.value.stride(1);
    // A (G, Lk) mask has a row per head; a (Lk) or (1, Lk) one is shared.
    const bool per_head = keep.defined() && keep.dim() == 2 && keep.size(0) > 1;
    const bool* keep_row =
        keep.defined() ? keep.data_ptr<bool>() + (per_head ? g * key_length : 0)
                       : nullptr;
    for (int64_t k0 = key_start; k0 < key_stop; k0 += block) {
      const int64_t keys = std::min(block, key_stop - k0);
      // Scores, keys × queries.
      Product(keys, queries, d, {k + k0 * k_stride, k_stride, 1}, queries_t,
              queries, scores, queries, /*accumulate=*/false,
              ScratchSlot::kExactPackedQueries);
      for (int64_t r = 0; r < keys; ++r) {
        MaskRow(scores + r * queries, k0 + r, q_begin, queries, keep_row,
                options);
      }
      cpu::SoftmaxColumnsStep(scores, keys, queries, column_max, column_sum,
                              correction, shift);
      for (int64_t i = 0; i < queries; ++i) {
        if (correction[i] == 1.0f) continue;
        float* row = outputs + i * dv;
        for (int64_t c = 0; c < dv; ++c) row[c] *= correction[i];
      }
      // outputs += probabilities (queries × keys: the block read
      // transposed) · values.
      Product(queries, dv, keys, {scores, 1, queries}, v + k0 * v_stride,
              v_stride, outputs, dv, /*accumulate=*/true,
              ScratchSlot::kExactPackedValues);
    }
    float* out = group.out.data_ptr<float>() + g * group.out.stride(0) +
                 q_begin * group.out.stride(1);
    cpu::DivideRows(outputs, column_sum, queries, dv, out, group.out.stride(1));
  }
}

}  // namespace favor::attention
