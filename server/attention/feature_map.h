// The feature maps φ of the linear kernels, as tensors (for tests, tools and
// anyone who wants φ(q)ᵀφ(k) itself). Attention does not call these: it
// computes the same features chunk by chunk (features.h).
#ifndef FAVOR_SERVER_ATTENTION_FEATURE_MAP_H_
#define FAVOR_SERVER_ATTENTION_FEATURE_MAP_H_

#include "absl/status/statusor.h"
#include "server/attention/kernel.h"

namespace at {
class Tensor;
}  // namespace at

namespace favor::attention {

enum class FeatureRole {
  // The estimator itself, no stabilising shift: for FAVOR+, hyperbolic and
  // trig, E[φ(q)ᵀφ(k)] = exp(qᵀk/√d).
  kUnshifted,
  // As attention uses them: queries shifted by their own row max, keys by the
  // max over each sequence and head (all but the last two dimensions).
  kQuery,
  kKey,
};

// φ(x) for x of shape (..., L, d), float32; returns (..., L, F) with F =
// FeatureCount(kernel, m, d). FAVOR+, hyperbolic and trig include their
// m^-1/2 (or (2m)^-1/2) factor; ε is added to FAVOR+, hyperbolic and ReLU
// features. INVALID_ARGUMENT for softmax (it has no feature map) and for a
// missing or mismatched projection.
absl::StatusOr<at::Tensor> FeatureMap(const at::Tensor& x, Kernel kernel,
                                      const at::Tensor& projection,
                                      FeatureRole role, float epsilon);

}  // namespace favor::attention

#endif  // FAVOR_SERVER_ATTENTION_FEATURE_MAP_H_
