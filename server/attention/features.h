// The per-chunk feature primitives shared by attention and FeatureMap.
// Implementation detail of server/attention: includes ATen, not for other
// modules.
//
// Every primitive works on a chunk x of shape (G, c, d) (G heads of one
// sequence, c tokens) in float32 and leaves out the constant factors (m^-1/2,
// FAVOR++'s D) that cancel in attention's normalisation.
#ifndef FAVOR_SERVER_ATTENTION_FEATURES_H_
#define FAVOR_SERVER_ATTENTION_FEATURES_H_

#include <ATen/core/Tensor.h>

#include "absl/status/statusor.h"
#include "server/attention/kernel.h"

namespace favor::attention {

// FAVOR++'s per-head affine map of the projection, u ↦ B·u + A‖ω_f‖² (ω_f
// the unscaled row f of W), which makes its features FAVOR+'s: exp(B·u +
// A‖ω_f‖² − ‖x'‖²/2 − shift). Undefined members mean the identity (every
// other kernel).
struct LogitMap {
  at::Tensor scale;  // (G, 1, 1): B = √(1 − 4A)
  at::Tensor bias;   // (G, 1, m): A‖ω_f‖²
};

class FeatureContext {
 public:
  // Checks the projection against the kernel and head size; the projection
  // is copied to float32 on `device`, pre-scaled by d^-1/4 and transposed.
  static absl::StatusOr<FeatureContext> Create(Kernel kernel,
                                               const at::Tensor& projection,
                                               int64_t head_dim,
                                               c10::Device device,
                                               float epsilon);

  Kernel kernel() const { return kernel_; }
  const KernelTraits& traits() const { return traits_; }
  int64_t num_features() const { return num_features_; }
  float epsilon() const { return epsilon_; }
  // d^-1/4 · Wᵀ, (d, m); undefined for kernels without a projection.
  const at::Tensor& scaled_projection_t() const { return projection_t_; }

  // ‖ω_f‖² of each unscaled row of W, (m); defined for FAVOR++ only.
  const at::Tensor& row_squared_norms() const { return row_squared_norms_; }

  // The projected chunk U: x' Wᵀ with x' = d^-1/4 x for projection kernels,
  // mapped by `logits` where defined (FAVOR++), x itself otherwise (as
  // float32).
  at::Tensor Project(const at::Tensor& x, const LogitMap& logits = {}) const;
  // FAVOR++'s map for A of shape (G, 1, 1) (A < 1/4), float32 on A's device.
  LogitMap FavorPlusPlusLogits(const at::Tensor& a) const;
  // ‖x'‖²/2 per token, (G, c, 1).
  at::Tensor HalfSquaredNorm(const at::Tensor& x) const;
  // The stabilising key shift of a chunk: (G, 1, 1) for scalar shifts,
  // (G, 1, F) per feature, undefined for kernels without one. Rows with
  // keep == false are ignored; with none kept the shift is kEmptyShift.
  at::Tensor KeyShift(const at::Tensor& u, const at::Tensor& half_norm,
                      const at::Tensor& keep) const;
  // Each key's own scalar shift, (G, c, 1): the max KeyShift takes over a
  // chunk, taken over that key alone; kEmptyShift where keep is false.
  // Defined for KeyShift::kScalar kernels only (causal attention's running
  // shift is the running maximum of these).
  at::Tensor KeyRowShifts(const at::Tensor& u, const at::Tensor& half_norm,
                          const at::Tensor& keep) const;
  // Key features exp(log φ − shift) (G, c, F), without ε (attention adds ε·Σv
  // once per sequence instead of per token).
  at::Tensor KeyFeatures(const at::Tensor& u, const at::Tensor& half_norm,
                         const at::Tensor& shift) const;
  // Query features, each row shifted by its own max, with ε.
  at::Tensor QueryFeatures(const at::Tensor& u,
                           const at::Tensor& half_norm) const;

  // A shift below every real one: exp(kEmptyShift − s) is 0 and
  // exp(kEmptyShift − kEmptyShift) is 1, unlike −∞.
  static constexpr float kEmptyShift = -1e30f;

 private:
  // What a key shift is the maximum of, per token and feature (or per token,
  // (G, c, 1), for trig); undefined for kernels without a shift.
  at::Tensor ShiftedLogits(const at::Tensor& u,
                           const at::Tensor& half_norm) const;

  Kernel kernel_ = Kernel::kFavorPositive;
  KernelTraits traits_;
  int64_t head_dim_ = 0;
  int64_t num_features_ = 0;
  float epsilon_ = 0;
  at::Tensor projection_t_;
  at::Tensor row_squared_norms_;
};

}  // namespace favor::attention

#endif  // FAVOR_SERVER_ATTENTION_FEATURES_H_
