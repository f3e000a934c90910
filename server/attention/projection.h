// Random projections for the feature maps: the m×d matrix W of φ(x).
#ifndef FAVOR_SERVER_ATTENTION_PROJECTION_H_
#define FAVOR_SERVER_ATTENTION_PROJECTION_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace at {
class Tensor;
}  // namespace at

namespace favor::attention {

struct ProjectionOptions {
  // m, the number of random features (rows of W). Must be ≥ 1.
  int64_t num_features = 256;
  // d, the head size (columns of W). Must be ≥ 1.
  int64_t head_dim = 64;
  // Orthogonal random features: d×d Gaussian blocks orthogonalised (Gram–
  // Schmidt in double precision, which gives the same Haar distribution as
  // QR), stacked to m rows. Otherwise rows are iid N(0, I_d).
  bool orthogonal = true;
  // Simplex random features (Reid et al., "Simplex Random Features", ICML
  // 2023), a refinement of orthogonal blocks: each block's d directions form
  // a regular simplex (unit vectors with pairwise dot products −1/(d − 1)),
  // randomly rotated (the simplex times the block's Haar rotation), with the
  // row norms below. Lowest kernel MSE among weight-independent couplings
  // of positive random features. Needs `orthogonal` and d ≥ 2.
  bool simplex = false;
  // Row norms of orthogonal (and simplex) blocks: χ(d)-distributed (the norms
  // of iid Gaussian rows, so each row is marginally N(0, I_d)) or all exactly
  // √d.
  enum class RowNorm { kChi, kSqrtDim };
  RowNorm row_norm = RowNorm::kChi;
  // Seed and draw index: the matrix is a pure function of all fields above
  // and these two, on any machine and any LibTorch version. Redrawing
  // (Performer's periodic feature redraw) is drawing with the next index.
  uint64_t seed = 0;
  uint64_t draw_index = 0;
};

// Draws W as a contiguous float32 CPU tensor of shape (num_features, head_dim).
// INVALID_ARGUMENT when num_features or head_dim is below 1 or too large, or
// for simplex without orthogonal or with head_dim 1.
absl::StatusOr<at::Tensor> DrawProjection(const ProjectionOptions& options);

}  // namespace favor::attention

#endif  // FAVOR_SERVER_ATTENTION_PROJECTION_H_
