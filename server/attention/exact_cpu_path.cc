#include "server/attention/exact_cpu_path.h"

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "server/attention/cpu_gemm.h"
#include "server/attention/cpu_gemm_bf16.h"
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
// thread's `packed` slot first on AVX2 (each key block's values).
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

// out (rows × cols, row stride cols) = x widened to float32: bfloat16 is a
// float32's upper half, so exactly.
void Widen(const cpu::BFloat16Bits* x, int64_t stride, int64_t rows,
           int64_t cols, float* out) {
  for (int64_t i = 0; i < rows; ++i) {
    const cpu::BFloat16Bits* row = x + i * stride;
    float* dst = out + i * cols;
    for (int64_t c = 0; c < cols; ++c) {
      const uint32_t bits = uint32_t{row[c]} << 16;
      std::memcpy(dst + c, &bits, sizeof(bits));
    }
  }
}

// Rows of a (G, L, ·) input in float32: in place, or (bfloat16) rows
// [begin, begin + rows) of head g widened into the thread's `slot`.
struct Rows {
  const float* data;
  int64_t stride;
};
Rows RowsOf(const at::Tensor& x, int64_t g, int64_t begin, int64_t rows,
            ScratchSlot slot) {
  const int64_t stride = x.stride(1), cols = x.size(2);
  const int64_t offset = g * x.stride(0) + begin * stride;
  if (x.scalar_type() == at::kFloat) {
    return {x.data_ptr<float>() + offset, stride};
  }
  float* out = Scratch(slot, rows, cols);
  Widen(static_cast<const cpu::BFloat16Bits*>(x.data_ptr()) + offset, stride,
        rows, cols, out);
  return {out, cols};
}

}  // namespace

bool ExactCpuPathApplies(const HeadGroup& group) {
  const at::ScalarType type = group.query.scalar_type();
  const auto rows_of_type = [type](const at::Tensor& t) {
    return t.scalar_type() == type && t.dim() == 3 && t.stride(2) == 1;
  };
  return group.query.device().is_cpu() &&
         (type == at::kFloat || type == at::kBFloat16) &&
         rows_of_type(group.query) && rows_of_type(group.key) &&
         rows_of_type(group.value) && rows_of_type(group.out) &&
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
    const Rows q =
        RowsOf(group.query, g, q_begin, queries, ScratchSlot::kExactWideRows);
    // The tile's queries as the first product's right-hand operand (d ×
    // queries), scaled by 1/√d as they are copied.
    for (int64_t i = 0; i < queries; ++i) {
      for (int64_t c = 0; c < d; ++c) {
        queries_t[c * queries + i] = q.data[i * q.stride + c] * scale;
      }
    }
    // On AVX2 packed once for all the tile's key blocks.
    const float* const packed_queries =
        ProductsOnPackedAvx2() ? PackedForAvx2(ScratchSlot::kExactPackedQueries,
                                               d, queries, queries_t, queries)
                               : nullptr;
    std::fill(column_max, column_max + queries, kMinusInf);
    std::fill(column_sum, column_sum + queries, 0.0f);
    std::fill(outputs, outputs + queries * dv, 0.0f);
    // A (G, Lk) mask has a row per head; a (Lk) or (1, Lk) one is shared.
    const bool per_head = keep.defined() && keep.dim() == 2 && keep.size(0) > 1;
    const bool* keep_row =
        keep.defined() ? keep.data_ptr<bool>() + (per_head ? g * key_length : 0)
                       : nullptr;
    for (int64_t k0 = key_start; k0 < key_stop; k0 += block) {
      const int64_t keys = std::min(block, key_stop - k0);
      // Scores, keys × queries.
      const Rows k =
          RowsOf(group.key, g, k0, keys, ScratchSlot::kExactWideRows);
      if (packed_queries != nullptr) {
        PackedProduct(keys, queries, d, {k.data, k.stride, 1}, packed_queries,
                      scores, queries, /*accumulate=*/false);
      } else {
        MatMul(keys, queries, d, {k.data, k.stride, 1}, queries_t, queries,
               scores, queries, /*accumulate=*/false);
      }
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
      const Rows v =
          RowsOf(group.value, g, k0, keys, ScratchSlot::kExactWideRows);
      Product(queries, dv, keys, {scores, 1, queries}, v.data, v.stride,
              outputs, dv, /*accumulate=*/true,
              ScratchSlot::kExactPackedValues);
    }
    const int64_t out_offset =
        g * group.out.stride(0) + q_begin * group.out.stride(1);
    if (group.out.scalar_type() == at::kFloat) {
      cpu::DivideRows(outputs, column_sum, queries, dv,
                      group.out.data_ptr<float>() + out_offset,
                      group.out.stride(1));
    } else {  // bfloat16, rounded to nearest from the float32 quotients
      cpu::DivideRows(outputs, column_sum, queries, dv, outputs, dv);
      cpu::ConvertToBF16(
          queries, dv, {outputs, dv, 1},
          static_cast<cpu::BFloat16Bits*>(group.out.data_ptr()) + out_offset,
          group.out.stride(1));
    }
  }
}

}  // namespace favor::attention
