#include "server/attention/feature_map.h"

#include <ATen/ATen.h>

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/attention/features.h"
#include "server/common/status_macros.h"

namespace favor::attention {
namespace {

// The constant factor that makes φ(q)ᵀφ(k) estimate exp(qᵀk/√d), for m
// random features.
double EstimatorScale(Kernel kernel, int64_t num_features) {
  switch (kernel) {
    case Kernel::kFavorPositive:
    case Kernel::kTrigonometric:
      return 1.0 / std::sqrt(static_cast<double>(num_features));
    case Kernel::kFavorHyperbolic:
      return 1.0 / std::sqrt(2.0 * static_cast<double>(num_features));
    default:
      return 1.0;
  }
}

at::Tensor UnshiftedFeatures(const FeatureContext& context, const at::Tensor& u,
                             const at::Tensor& half) {
  switch (context.kernel()) {
    case Kernel::kFavorPositive:
    case Kernel::kFavorHyperbolic:
    case Kernel::kTrigonometric:
    case Kernel::kExp: {
      // No shift: exp(log φ − 0), plus ε where the kernel has one.
      const at::Tensor zero = at::zeros({1}, u.options());
      return context.KeyFeatures(u, half, zero) + context.epsilon();
    }
    default:
      return context.KeyFeatures(u, half, at::Tensor()) + context.epsilon();
  }
}

}  // namespace

absl::StatusOr<at::Tensor> FeatureMap(const at::Tensor& x, Kernel kernel,
                                      const at::Tensor& projection,
                                      FeatureRole role, float epsilon) {
  if (kernel == Kernel::kSoftmaxExact) {
    return absl::InvalidArgumentError(
        "the softmax kernel has no feature map; use a linear kernel");
  }
  if (!x.defined() || x.dim() < 2 || !x.is_floating_point()) {
    return absl::InvalidArgumentError(
        "x must be a floating-point tensor of shape (..., L, d)");
  }
  ASSIGN_OR_RETURN(FeatureContext context,
                   FeatureContext::Create(kernel, projection, x.size(-1),
                                          x.device(), epsilon));
  try {
    const at::Tensor chunk = x.reshape({-1, x.size(-2), x.size(-1)});
    const at::Tensor u = context.Project(chunk);
    const at::Tensor half = context.HalfSquaredNorm(chunk);
    at::Tensor features;
    switch (role) {
      case FeatureRole::kUnshifted:
        features = UnshiftedFeatures(context, u, half);
        break;
      case FeatureRole::kQuery:
        features = context.QueryFeatures(u, half);
        break;
      case FeatureRole::kKey:
        features = context.KeyFeatures(
                       u, half, context.KeyShift(u, half, at::Tensor())) +
                   context.epsilon();
        break;
    }
    std::vector<int64_t> shape = x.sizes().vec();
    shape.back() = context.num_features();
    const double scale =
        EstimatorScale(kernel, projection.defined() ? projection.size(0) : 1);
    return (features * scale).reshape(shape);
  } catch (const c10::Error& error) {
    return absl::InternalError(
        absl::StrCat("feature map failed: ", error.what_without_backtrace()));
  }
}

}  // namespace favor::attention
