#include "server/attention/projection.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <cmath>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/attention/philox.h"

namespace favor::attention {
namespace {

constexpr int64_t kMaxFeatures = 1 << 16;
constexpr int64_t kMaxHeadDim = 1 << 12;
// Stream ids below this number draw orthogonal blocks; this one draws norms.
constexpr uint64_t kNormStream = 0xFFFFFFFFu;

uint64_t StreamId(uint64_t draw_index, uint64_t purpose) {
  return (draw_index << 32) | purpose;
}

// A d×d block whose rows are orthonormal: modified Gram–Schmidt on a
// Gaussian matrix, in double precision, row-major.
std::vector<double> OrthogonalBlock(int64_t d, GaussianStream& gaussian) {
  std::vector<double> block(d * d);
  for (double& x : block) x = gaussian.Next();
  for (int64_t i = 0; i < d; ++i) {
    double* row = &block[i * d];
    for (int64_t j = 0; j < i; ++j) {
      const double* prev = &block[j * d];
      double dot = 0;
      for (int64_t c = 0; c < d; ++c) dot += row[c] * prev[c];
      for (int64_t c = 0; c < d; ++c) row[c] -= dot * prev[c];
    }
    double norm = 0;
    for (int64_t c = 0; c < d; ++c) norm += row[c] * row[c];
    norm = std::sqrt(norm);
    for (int64_t c = 0; c < d; ++c) row[c] /= norm;
  }
  return block;
}

// Turns an orthonormal block (rows Q_i) into a rotated regular simplex: the
// unit vectors s_i = √(d/(d−1)) (e_i − 1/d) have s_iᵀs_j = −1/(d − 1), and
// s_iᵀQ = √(d/(d−1)) (Q_i − Q̄) with Q̄ the mean row. Since Q is Haar, this
// is a uniformly rotated simplex.
void RotatedSimplex(int64_t d, std::vector<double>& block) {
  std::vector<double> mean(d, 0.0);
  for (int64_t i = 0; i < d; ++i) {
    for (int64_t c = 0; c < d; ++c) mean[c] += block[i * d + c];
  }
  for (double& x : mean) x /= static_cast<double>(d);
  const double scale =
      std::sqrt(static_cast<double>(d) / static_cast<double>(d - 1));
  for (int64_t i = 0; i < d; ++i) {
    for (int64_t c = 0; c < d; ++c) {
      block[i * d + c] = scale * (block[i * d + c] - mean[c]);
    }
  }
}

std::vector<double> OrthogonalRows(const ProjectionOptions& options) {
  const int64_t m = options.num_features, d = options.head_dim;
  std::vector<double> rows;
  rows.reserve(m * d);
  for (uint64_t b = 0; static_cast<int64_t>(rows.size()) < m * d; ++b) {
    GaussianStream gaussian(options.seed, StreamId(options.draw_index, b));
    std::vector<double> block = OrthogonalBlock(d, gaussian);
    if (options.simplex) RotatedSimplex(d, block);
    const int64_t take = std::min<int64_t>(d * d, m * d - rows.size());
    rows.insert(rows.end(), block.begin(), block.begin() + take);
  }
  // Each row of an orthogonal or simplex block has norm 1; give it the norm
  // a Gaussian row would have (χ(d)) or √d.
  GaussianStream norms(options.seed, StreamId(options.draw_index, kNormStream));
  for (int64_t i = 0; i < m; ++i) {
    double scale = std::sqrt(static_cast<double>(d));
    if (options.row_norm == ProjectionOptions::RowNorm::kChi) {
      double sum_sq = 0;
      for (int64_t c = 0; c < d; ++c) {
        const double g = norms.Next();
        sum_sq += g * g;
      }
      scale = std::sqrt(sum_sq);
    }
    for (int64_t c = 0; c < d; ++c) rows[i * d + c] *= scale;
  }
  return rows;
}

std::vector<double> IidRows(const ProjectionOptions& options) {
  GaussianStream gaussian(options.seed, StreamId(options.draw_index, 0));
  std::vector<double> rows(options.num_features * options.head_dim);
  for (double& x : rows) x = gaussian.Next();
  return rows;
}

}  // namespace

absl::StatusOr<at::Tensor> DrawProjection(const ProjectionOptions& options) {
  if (options.num_features < 1 || options.num_features > kMaxFeatures) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_features (m) must be in [1, ", kMaxFeatures,
                     "], got ", options.num_features));
  }
  if (options.head_dim < 1 || options.head_dim > kMaxHeadDim) {
    return absl::InvalidArgumentError(
        absl::StrCat("head_dim (d) must be in [1, ", kMaxHeadDim, "], got ",
                     options.head_dim));
  }
  if (options.simplex && (!options.orthogonal || options.head_dim < 2)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "simplex random features need orthogonal blocks and head_dim (d) >= "
        "2, got orthogonal = ",
        options.orthogonal ? "true" : "false", ", d = ", options.head_dim));
  }
  const std::vector<double> rows =
      options.orthogonal ? OrthogonalRows(options) : IidRows(options);
  at::Tensor projection =
      at::empty({options.num_features, options.head_dim}, at::kFloat);
  float* out = projection.data_ptr<float>();
  for (size_t i = 0; i < rows.size(); ++i) out[i] = static_cast<float>(rows[i]);
  return projection;
}

}  // namespace favor::attention
