#include "server/model/layers.h"

#include <ATen/ATen.h>

#include <cmath>

namespace favor::model::internal {

Linear Linear::Columns(int64_t begin, int64_t count) const {
  return {weight_t.narrow(1, begin, count), bias.narrow(0, begin, count)};
}

at::Tensor Linear::operator()(const at::Tensor& x) const {
  // LibTorch 1.13 hands a bfloat16 product to oneDNN (float32 sums) only
  // when rows · in · out > 16³ (mkldnn/Matmul.cpp, checksize); below, its
  // fallback sums in bfloat16 (measured: 2% off at depth 32). Such small
  // products are cheap in float32.
  constexpr int64_t kSmallestOneDnnProduct = 16 * 16 * 16;
  if (x.scalar_type() == at::kBFloat16 &&
      x.size(0) * weight_t.size(0) * weight_t.size(1) <=
          kSmallestOneDnnProduct) {
    return at::addmm(bias.to(at::kFloat), x.to(at::kFloat),
                     weight_t.to(at::kFloat))
        .to(at::kBFloat16);
  }
  return at::addmm(bias, x, weight_t);
}

at::Tensor Norm::operator()(const at::Tensor& x) const {
  if (type == NormType::kLayerNorm) {
    return at::layer_norm(x, {x.size(-1)}, weight, bias, eps);
  }
  // ‖x‖ in float32: a float16 sum of squares overflows at modest widths.
  const at::Tensor x32 = x.to(at::kFloat);
  const at::Tensor norm =
      at::linalg_vector_norm(x32, 2, {-1}, /*keepdim=*/true).clamp_min(eps);
  return (x32 * (scale.to(at::kFloat) / norm)).to(x.scalar_type());
}

void ActivateInPlace(Activation activation, at::Tensor& x) {
  switch (activation) {
    case Activation::kGelu:
      x = at::gelu(x, "none");
      return;
    case Activation::kGeluTanh:
      x = at::gelu(x, "tanh");
      return;
    case Activation::kRelu:
      x.relu_();
      return;
  }
}

RotaryTables MakeRotaryTables(const at::Tensor& positions, int64_t head_dim,
                              double base) {
  const int64_t half = head_dim / 2;
  const auto double_options = positions.options().dtype(at::kDouble);
  // base^(−2i/d) = exp(−(2i/d) ln base)
  const at::Tensor inverse_frequency =
      at::exp(at::arange(half, double_options) *
              (-2.0 * std::log(base) / static_cast<double>(head_dim)));
  const at::Tensor angles =
      positions.to(at::kDouble).unsqueeze(1) * inverse_frequency.unsqueeze(0);
  return {at::cos(angles).to(at::kFloat), at::sin(angles).to(at::kFloat)};
}

void ApplyRotaryInPlace(at::Tensor x, const at::Tensor& cos,
                        const at::Tensor& sin) {
  const int64_t half = x.size(2) / 2;
  at::Tensor first = x.narrow(2, 0, half);
  at::Tensor second = x.narrow(2, half, half);
  const at::Tensor c = cos.unsqueeze(1).to(x.scalar_type());
  const at::Tensor s = sin.unsqueeze(1).to(x.scalar_type());
  const at::Tensor rotated_first = first * c - second * s;
  second.copy_(second * c + first * s);
  first.copy_(rotated_first);
}

}  // namespace favor::model::internal
