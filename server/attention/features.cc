#include "server/attention/features.h"

#include <ATen/ATen.h>

#include <array>
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

// Each kernel's feature functions (kernel.h's KernelTraits say what they
// need). u is the projected chunk (G, c, F0), h = ‖x'‖²/2 per token
// (G, c, 1); key features leave ε out (attention adds ε·Σv once per
// sequence), query features add it.

at::Tensor Identity(const at::Tensor& u, const at::Tensor& /*h*/) { return u; }
at::Tensor Magnitude(const at::Tensor& u, const at::Tensor& /*h*/) {
  return u.abs();
}
at::Tensor HalfNorm(const at::Tensor& /*u*/, const at::Tensor& h) { return h; }

at::Tensor PositiveKeys(const at::Tensor& u, const at::Tensor& h,
                        const at::Tensor& shift) {
  return at::exp(u - h - shift);
}
at::Tensor PositiveQueries(const at::Tensor& u, const at::Tensor& h,
                           float epsilon) {
  return at::exp(u - h - u.amax({-1}, /*keepdim=*/true)) + epsilon;
}

at::Tensor HyperbolicKeys(const at::Tensor& u, const at::Tensor& h,
                          const at::Tensor& shift) {
  return at::cat({at::exp(u - h - shift), at::exp(-u - h - shift)}, -1);
}
at::Tensor HyperbolicQueries(const at::Tensor& u, const at::Tensor& h,
                             float epsilon) {
  const at::Tensor offset = h + u.abs().amax({-1}, /*keepdim=*/true);
  return at::cat({at::exp(u - offset), at::exp(-u - offset)}, -1) + epsilon;
}

at::Tensor TrigKeys(const at::Tensor& u, const at::Tensor& h,
                    const at::Tensor& shift) {
  return at::exp(h - shift) * at::cat({at::sin(u), at::cos(u)}, -1);
}
at::Tensor TrigQueries(const at::Tensor& u, const at::Tensor& /*h*/,
                       float /*epsilon*/) {
  return at::cat({at::sin(u), at::cos(u)}, -1);
}

at::Tensor ReluKeys(const at::Tensor& u, const at::Tensor& /*h*/,
                    const at::Tensor& /*shift*/) {
  return at::relu(u);
}
at::Tensor ReluQueries(const at::Tensor& u, const at::Tensor& /*h*/,
                       float epsilon) {
  return at::relu(u) + epsilon;
}

at::Tensor EluPlusOneKeys(const at::Tensor& u, const at::Tensor& /*h*/,
                          const at::Tensor& /*shift*/) {
  return at::elu(u) + 1;
}
at::Tensor EluPlusOneQueries(const at::Tensor& u, const at::Tensor& /*h*/,
                             float /*epsilon*/) {
  return at::elu(u) + 1;
}

at::Tensor ExpKeys(const at::Tensor& u, const at::Tensor& /*h*/,
                   const at::Tensor& shift) {
  return at::exp(u - shift);
}
at::Tensor ExpQueries(const at::Tensor& u, const at::Tensor& /*h*/,
                      float /*epsilon*/) {
  return at::softmax(u, -1);
}

struct FeatureFunctions {
  Kernel kernel;
  // What a key shift is the maximum of, per token and feature (or per
  // token); null for kernels without a shift.
  at::Tensor (*shifted_logits)(const at::Tensor& u, const at::Tensor& h);
  at::Tensor (*key_features)(const at::Tensor& u, const at::Tensor& h,
                             const at::Tensor& shift);
  at::Tensor (*query_features)(const at::Tensor& u, const at::Tensor& h,
                               float epsilon);
};

// One row per kernel, in the enumeration's order (checked below); softmax
// has no features.
constexpr std::array<FeatureFunctions, kNumKernels> kFeatureFunctions = {{
    {Kernel::kSoftmaxExact, nullptr, nullptr, nullptr},
    {Kernel::kFavorPositive, Identity, PositiveKeys, PositiveQueries},
    {Kernel::kFavorPlusPlus, Identity, PositiveKeys, PositiveQueries},
    {Kernel::kFavorHyperbolic, Magnitude, HyperbolicKeys, HyperbolicQueries},
    {Kernel::kTrigonometric, HalfNorm, TrigKeys, TrigQueries},
    {Kernel::kRelu, nullptr, ReluKeys, ReluQueries},
    {Kernel::kEluPlusOne, nullptr, EluPlusOneKeys, EluPlusOneQueries},
    {Kernel::kExp, Identity, ExpKeys, ExpQueries},
}};

constexpr bool RowsFollowTheEnumeration() {
  for (int i = 0; i < kNumKernels; ++i) {
    if (static_cast<int>(kFeatureFunctions[i].kernel) != i) return false;
  }
  return true;
}
static_assert(RowsFollowTheEnumeration(),
              "kFeatureFunctions must hold one row per Kernel, in order");

const FeatureFunctions& FunctionsOf(Kernel kernel) {
  return kFeatureFunctions[static_cast<int>(kernel)];
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
  if (context.traits_.coefficient_per_sequence) {
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
  const auto logits = FunctionsOf(kernel_).shifted_logits;
  return logits != nullptr ? logits(u, half_norm) : at::Tensor();
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
  const auto features = FunctionsOf(kernel_).key_features;
  return features != nullptr ? features(u, half_norm, shift) : u;
}

at::Tensor FeatureContext::QueryFeatures(const at::Tensor& u,
                                         const at::Tensor& half_norm) const {
  const auto features = FunctionsOf(kernel_).query_features;
  return features != nullptr ? features(u, half_norm, epsilon_) : u;
}

}  // namespace favor::attention
