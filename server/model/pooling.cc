#include "server/model/pooling.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace favor::model::internal {
namespace {

// α = softmax_i(q · y_i / √H), pooled = Σ α_i y_i.
at::Tensor AttentionPool(const at::Tensor& rows, const at::Tensor& query) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(rows.size(1)));
  const at::Tensor weights = at::softmax(at::mv(rows, query) * scale, 0);
  return at::mv(rows.t(), weights);
}

// Σ rows / n in float32. Rows in another dtype are widened a block at a
// time: a float32 copy of a long sequence's rows would cost twice the
// rows' own memory. Blocks start at the sequence's first row, so the sum
// does not depend on the batch.
at::Tensor MeanRows(const at::Tensor& rows) {
  if (rows.scalar_type() == at::kFloat) return rows.mean(0);
  constexpr int64_t kBlockRows = 4096;
  at::Tensor sum = at::zeros({rows.size(1)}, rows.options().dtype(at::kFloat));
  for (int64_t begin = 0; begin < rows.size(0); begin += kBlockRows) {
    const int64_t count = std::min(kBlockRows, rows.size(0) - begin);
    sum.add_(rows.narrow(0, begin, count).to(at::kFloat).sum(0));
  }
  return sum.div_(static_cast<double>(rows.size(0)));
}

}  // namespace

PackedVectors Pool(const PackedVectors& vectors, Pooling pooling,
                   const at::Tensor& query) {
  if (pooling == Pooling::kNone) {
    return {vectors.values.to(at::kFloat), vectors.offsets};
  }
  const int64_t sequences = static_cast<int64_t>(vectors.offsets.size()) - 1;
  PackedVectors pooled;
  pooled.values = at::empty({sequences, vectors.values.size(1)},
                            vectors.values.options().dtype(at::kFloat));
  pooled.offsets.resize(sequences + 1);
  const at::Tensor q = query.defined() ? query.to(at::kFloat) : query;
  for (int64_t s = 0; s < sequences; ++s) {
    pooled.offsets[s + 1] = s + 1;
    const int64_t begin = vectors.offsets[s];
    const at::Tensor rows =
        vectors.values.narrow(0, begin, vectors.offsets[s + 1] - begin);
    at::Tensor out = pooled.values[s];
    switch (pooling) {
      case Pooling::kMean:
        out.copy_(MeanRows(rows));
        break;
      case Pooling::kCls:
        out.copy_(rows[0]);
        break;
      case Pooling::kMax:  // exact in any dtype
        out.copy_(rows.amax(0));
        break;
      case Pooling::kLastToken:
        out.copy_(rows[rows.size(0) - 1]);
        break;
      case Pooling::kAttention:
        out.copy_(AttentionPool(rows.to(at::kFloat), q));
        break;
      case Pooling::kNone:
        break;
    }
  }
  return pooled;
}

void NormalizeRows(at::Tensor& rows) {
  rows.div_(
      at::linalg_vector_norm(rows, 2, {-1}, /*keepdim=*/true).clamp_min(1e-12));
}

}  // namespace favor::model::internal
