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
  // The estimator itself, no stabilising shift: for FAVOR+, FAVOR++, hyperbolic
  // and
  // trig, E[φ(q)ᵀφ(k)] = exp(qᵀk/√d).
  kUnshifted,
  // As attention uses them: queries shifted by their own row max, keys by the
  // max over each sequence and head (all but the last two dimensions).
  kQuery,
  kKey,
};

// φ(x) for x of shape (..., L, d), float32; returns (..., L, F) with F =
// FeatureCount(kernel, m, d). FAVOR+, FAVOR++, hyperbolic and trig include
// their m^-1/2 (or (2m)^-1/2) factor; ε is added to FAVOR+, FAVOR++, hyperbolic
// and ReLU features. INVALID_ARGUMENT for softmax (it has no feature map) and
// for a missing or mismatched projection.
absl::StatusOr<at::Tensor> FeatureMap(const at::Tensor& x, Kernel kernel,
                                      const at::Tensor& projection,
                                      FeatureRole role, float epsilon);

// The same, with FAVOR++'s coefficient A given for each matrix of x:
// `favor_plus_plus_a` has x's leading shape (all but the last two
// dimensions) or is a single value, and every A is below 1/4. FAVOR++'s
// kUnshifted features include D = (1 − 4A)^(d/4); its kQuery and kKey
// features leave D out, as attention does (it cancels, like m^-1/2). Other
// kernels ignore A. INVALID_ARGUMENT for FAVOR++ without A (the 5-argument
// form) or with A ≥ 1/4.
absl::StatusOr<at::Tensor> FeatureMap(const at::Tensor& x, Kernel kernel,
                                      const at::Tensor& projection,
                                      FeatureRole role, float epsilon,
                                      const at::Tensor& favor_plus_plus_a);

// FAVOR++'s A* for queries (..., Lq, d) and keys (..., Lk, d) with the same
// leading shape: one A per matrix, from the means of ‖x'‖² and of x' over
// its queries and keys (favor_plus_plus.h gives the formula), as attention
// chooses it. Returns float64 of the leading shape, on the inputs' device.
absl::StatusOr<at::Tensor> FavorPlusPlusCoefficient(const at::Tensor& query,
                                                    const at::Tensor& key);

}  // namespace favor::attention

#endif  // FAVOR_SERVER_ATTENTION_FEATURE_MAP_H_
