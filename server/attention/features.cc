#include "server/attention/features.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/attention/keep_mask.h"

namespace favor::attention {
namespace {

at::Tensor MaskRows(const at::Tensor& u, const at::Tensor& keep) {
  if (!keep.defined()) return u;
  return u.masked_fill(DroppedRows(keep),
                       -std::numeric_limits<float>::infinity());
}

at::Tensor ClampEmpty(const at::Tensor& shift) {
  return at::clamp_min(shift, FeatureContext::kEmptyShift);
}

}  // namespace

absl::StatusOr<FeatureContext> FeatureContext::Create(
    Kernel kernel, const at::Tensor& projection, int64_t head_dim,
    c10::Device device, float epsilon) {
  FeatureContext context;
  context.kernel_ = kernel;
  context.traits_ = TraitsOf(kernel);
  context.head_dim_ = head_dim;
  context.epsilon_ = context.traits_.adds_epsilon ? epsilon : 0.0f;
  if (!context.traits_.uses_projection) {
    context.num_features_ = FeatureCount(kernel, 0, head_dim);
    return context;
  }
  if (!projection.defined()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel '", KernelName(kernel), "' needs a projection matrix"));
  }
  if (projection.dim() != 2 || projection.size(0) < 1 ||
      projection.size(1) != head_dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "projection must have shape (m, d) with m >= 1 and d = ", head_dim,
        " (the head size), got ", c10::str(projection.sizes())));
  }
  if (!projection.is_floating_point()) {
    return absl::InvalidArgumentError(
        absl::StrCat("projection must be floating point, got ",
                     c10::toString(projection.scalar_type())));
  }
  context.num_features_ = FeatureCount(kernel, projection.size(0), head_dim);
  const double data_scale = std::pow(static_cast<double>(head_dim), -0.25);
  const at::Tensor projection32 = projection.to(device, at::kFloat);
  context.projection_t_ = (projection32 * data_scale).t().contiguous();
  if (kernel == Kernel::kFavorPlusPlus) {
    context.row_squared_norms_ = projection32.square().sum(1);
  }
  return context;
}

at::Tensor FeatureContext::Project(const at::Tensor& x,
                                   const LogitMap& logits) const {
  at::Tensor x32 = x.to(at::kFloat);
  if (!projection_t_.defined()) return x32;
  if (!logits.scale.defined()) return at::matmul(x32, projection_t_);
  return at::addcmul(logits.bias, at::matmul(x32, projection_t_), logits.scale);
}

LogitMap FeatureContext::FavorPlusPlusLogits(const at::Tensor& a) const {
  const at::Tensor a32 = a.to(at::kFloat);
  return {at::sqrt(1.0 - 4.0 * a32),
          (a32 * row_squared_norms_.to(a32.device()).view({1, 1, -1}))
              .contiguous()};
}

at::Tensor FeatureContext::HalfSquaredNorm(const at::Tensor& x) const {
  const double scale = 0.5 / std::sqrt(static_cast<double>(head_dim_));
  return x.to(at::kFloat).square().sum(-1, /*keepdim=*/true) * scale;
}

at::Tensor FeatureContext::ShiftedLogits(const at::Tensor& u,
                                         const at::Tensor& half_norm) const {
  switch (kernel_) {
    case Kernel::kFavorPositive:
    case Kernel::kFavorPlusPlus:
    case Kernel::kExp:
      return u;
    case Kernel::kFavorHyperbolic:
      return u.abs();
    case Kernel::kTrigonometric:
      return half_norm;
    case Kernel::kSoftmaxExact:
    case Kernel::kRelu:
    case Kernel::kEluPlusOne:
      break;
  }
  return at::Tensor();
}

at::Tensor FeatureContext::KeyShift(const at::Tensor& u,
                                    const at::Tensor& half_norm,
                                    const at::Tensor& keep) const {
  const at::Tensor logits = ShiftedLogits(u, half_norm);
  if (!logits.defined()) return at::Tensor();
  if (traits_.key_shift == KeyShift::kPerFeature) {
    return ClampEmpty(MaskRows(logits, keep).amax({1}, /*keepdim=*/true));
  }
  return ClampEmpty(MaskRows(logits, keep).amax({1, 2}, /*keepdim=*/true));
}

at::Tensor FeatureContext::KeyRowShifts(const at::Tensor& u,
                                        const at::Tensor& half_norm,
                                        const at::Tensor& keep) const {
  if (traits_.key_shift != KeyShift::kScalar) return at::Tensor();
  return ClampEmpty(
      MaskRows(ShiftedLogits(u, half_norm), keep).amax({2}, /*keepdim=*/true));
}

at::Tensor FeatureContext::KeyFeatures(const at::Tensor& u,
                                       const at::Tensor& half_norm,
                                       const at::Tensor& shift) const {
  switch (kernel_) {
    case Kernel::kFavorPositive:
    case Kernel::kFavorPlusPlus:
      return at::exp(u - half_norm - shift);
    case Kernel::kFavorHyperbolic:
      return at::cat(
          {at::exp(u - half_norm - shift), at::exp(-u - half_norm - shift)},
          -1);
    case Kernel::kTrigonometric:
      return at::exp(half_norm - shift) * at::cat({at::sin(u), at::cos(u)}, -1);
    case Kernel::kRelu:
      return at::relu(u);
    case Kernel::kEluPlusOne:
      return at::elu(u) + 1;
    case Kernel::kExp:
      return at::exp(u - shift);
    case Kernel::kSoftmaxExact:
      break;
  }
  return u;
}

at::Tensor FeatureContext::QueryFeatures(const at::Tensor& u,
                                         const at::Tensor& half_norm) const {
  switch (kernel_) {
    case Kernel::kFavorPositive:
    case Kernel::kFavorPlusPlus:
      return at::exp(u - half_norm - u.amax({-1}, /*keepdim=*/true)) + epsilon_;
    case Kernel::kFavorHyperbolic: {
      const at::Tensor offset =
          half_norm + u.abs().amax({-1}, /*keepdim=*/true);
      return at::cat({at::exp(u - offset), at::exp(-u - offset)}, -1) +
             epsilon_;
    }
    case Kernel::kTrigonometric:
      return at::cat({at::sin(u), at::cos(u)}, -1);
    case Kernel::kRelu:
      return at::relu(u) + epsilon_;
    case Kernel::kEluPlusOne:
      return at::elu(u) + 1;
    case Kernel::kExp:
      return at::softmax(u, -1);
    case Kernel::kSoftmaxExact:
      break;
  }
  return u;
}

}  // namespace favor::attention
