#include "server/attention/feature_map.h"

#include <ATen/ATen.h>

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/attention/favor_plus_plus.h"
#include "server/attention/features.h"
#include "server/common/status_macros.h"

namespace favor::attention {
namespace {

// The constant factor that makes φ(q)ᵀφ(k) estimate exp(qᵀk/√d), for m
// random features.
double EstimatorScale(Kernel kernel, int64_t num_features) {
  const int rows = TraitsOf(kernel).estimator_scale_rows;
  if (rows == 0) return 1.0;
  return 1.0 / std::sqrt(static_cast<double>(rows * num_features));
}

at::Tensor UnshiftedFeatures(const FeatureContext& context, const at::Tensor& u,
                             const at::Tensor& half) {
  // No shift: exp(log φ − 0) for the kernels that take one; plus ε where
  // the kernel has one.
  const at::Tensor no_shift = context.traits().key_shift != KeyShift::kNone
                                  ? at::zeros({1}, u.options())
                                  : at::Tensor();
  return context.KeyFeatures(u, half, no_shift) + context.epsilon();
}

// FAVOR++'s A per matrix of x, (N, 1, 1) float64, checked to be below 1/4.
absl::StatusOr<at::Tensor> CoefficientPerMatrix(const at::Tensor& x,
                                                const at::Tensor& a) {
  if (!a.defined()) {
    return absl::InvalidArgumentError(
        "kernel 'favor++' needs its coefficient A (FavorPlusPlusCoefficient)");
  }
  const at::IntArrayRef leading = x.sizes().slice(0, x.dim() - 2);
  at::Tensor per_matrix;
  try {
    per_matrix =
        a.to(x.device(), at::kDouble).expand(leading).reshape({-1, 1, 1});
  } catch (const c10::Error&) {
    return absl::InvalidArgumentError(
        absl::StrCat("favor_plus_plus_a must have shape ", c10::str(leading),
                     " (x's leading dimensions) or be a single value, got ",
                     c10::str(a.sizes())));
  }
  if ((per_matrix >= 0.25).any().item<bool>()) {
    return absl::InvalidArgumentError(
        "favor_plus_plus_a must be below 1/4 (where FAVOR++ is defined)");
  }
  return per_matrix;
}

absl::Status CheckInput(const at::Tensor& x, const char* name) {
  if (!x.defined() || x.dim() < 2 || !x.is_floating_point()) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, " must be a floating-point tensor of shape (..., L, d)"));
  }
  return absl::OkStatus();
}

at::Tensor RoleFeatures(const FeatureContext& context, const at::Tensor& u,
                        const at::Tensor& half, FeatureRole role) {
  switch (role) {
    case FeatureRole::kUnshifted:
      return UnshiftedFeatures(context, u, half);
    case FeatureRole::kQuery:
      return context.QueryFeatures(u, half);
    case FeatureRole::kKey:
      return context.KeyFeatures(u, half,
                                 context.KeyShift(u, half, at::Tensor())) +
             context.epsilon();
  }
  return u;
}

}  // namespace

absl::StatusOr<at::Tensor> FeatureMap(const at::Tensor& x, Kernel kernel,
                                      const at::Tensor& projection,
                                      FeatureRole role, float epsilon) {
  return FeatureMap(x, kernel, projection, role, epsilon, at::Tensor());
}

absl::StatusOr<at::Tensor> FeatureMap(const at::Tensor& x, Kernel kernel,
                                      const at::Tensor& projection,
                                      FeatureRole role, float epsilon,
                                      const at::Tensor& favor_plus_plus_a) {
  if (kernel == Kernel::kSoftmaxExact) {
    return absl::InvalidArgumentError(
        "the softmax kernel has no feature map; use a linear kernel");
  }
  RETURN_IF_ERROR(CheckInput(x, "x"));
  ASSIGN_OR_RETURN(FeatureContext context,
                   FeatureContext::Create(kernel, projection, x.size(-1),
                                          x.device(), epsilon));
  at::Tensor a;
  if (TraitsOf(kernel).coefficient_per_sequence) {
    ASSIGN_OR_RETURN(a, CoefficientPerMatrix(x, favor_plus_plus_a));
  }
  try {
    const at::Tensor chunk = x.reshape({-1, x.size(-2), x.size(-1)});
    const LogitMap logits =
        a.defined() ? context.FavorPlusPlusLogits(a) : LogitMap{};
    const at::Tensor u = context.Project(chunk, logits);
    const at::Tensor half = context.HalfSquaredNorm(chunk);
    at::Tensor features =
        RoleFeatures(context, u, half, role) *
        EstimatorScale(kernel, projection.defined() ? projection.size(0) : 1);
    if (a.defined() && role == FeatureRole::kUnshifted) {
      // D = (1 − 4A)^(d/4), in double: it reaches 1e4 and more.
      features = features * (1.0 - 4.0 * a).pow(x.size(-1) / 4.0);
    }
    std::vector<int64_t> shape = x.sizes().vec();
    shape.back() = context.num_features();
    return features.to(at::kFloat).reshape(shape);
  } catch (const c10::Error& error) {
    return absl::InternalError(
        absl::StrCat("feature map failed: ", error.what_without_backtrace()));
  }
}

absl::StatusOr<at::Tensor> FavorPlusPlusCoefficient(const at::Tensor& query,
                                                    const at::Tensor& key) {
  RETURN_IF_ERROR(CheckInput(query, "query"));
  RETURN_IF_ERROR(CheckInput(key, "key"));
  const at::IntArrayRef leading = query.sizes().slice(0, query.dim() - 2);
  if (key.sizes().slice(0, key.dim() - 2) != leading ||
      key.size(-1) != query.size(-1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "query (..., Lq, d) and key (..., Lk, d) must share their leading "
        "dimensions and d, got ",
        c10::str(query.sizes()), " and ", c10::str(key.sizes())));
  }
  const int64_t d = query.size(-1);
  constexpr int64_t kChunkTokens = 4096;
  try {
    const RowMoments q =
        MomentsOf(query.reshape({-1, query.size(-2), d}), {}, kChunkTokens);
    const RowMoments k =
        MomentsOf(key.reshape({-1, key.size(-2), d}), {}, kChunkTokens);
    return OptimalA(q, k, d).reshape(leading);
  } catch (const c10::Error& error) {
    return absl::InternalError(absl::StrCat("FAVOR++ coefficient failed: ",
                                            error.what_without_backtrace()));
  }
}

}  // namespace favor::attention
