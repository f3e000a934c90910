#include "server/model/layers.h"

#include <ATen/ATen.h>

#include <cmath>

#include "server/attention/cpu_features.h"
#include "server/attention/cpu_gemm.h"
#include "server/attention/cpu_gemm_int8.h"
#include "server/model/row_kernels.h"

namespace favor::model::internal {

namespace cpu = attention::cpu;

void Linear::PackForTiles() {
  const cpu::GemmKernel kernel = cpu::ActiveGemmKernel();
  if (!weight_t.defined() || !weight_t.is_cpu() ||
      weight_t.scalar_type() != at::kFloat || weight_t.dim() != 2 ||
      weight_t.stride(1) != 1 || cpu::PanelColumns(kernel) == 0) {
    return;
  }
  const int64_t depth = weight_t.size(0), cols = weight_t.size(1);
  packed = at::empty({cpu::PackedBSize(depth, cols, kernel)}, at::kFloat);
  cpu::PackB(depth, cols, weight_t.data_ptr<float>(), weight_t.stride(0),
             kernel, packed.data_ptr<float>());
  packed_for = kernel;
}

void Linear::QuantizeInt8() {
  if (!weight_t.defined() || !weight_t.is_cpu() ||
      weight_t.scalar_type() != at::kFloat || weight_t.dim() != 2 ||
      weight_t.stride(1) != 1) {
    return;
  }
  const int64_t depth = weight_t.size(0), cols = weight_t.size(1);
  int8_weight = at::empty({cpu::Int8PackedWeightBytes(depth, cols)}, at::kChar);
  int8_scales = at::empty({cols}, at::kFloat);
  int8_column_sums = at::empty({cols}, at::kInt);
  cpu::QuantizeWeightInt8(depth, cols, weight_t.data_ptr<float>(),
                          weight_t.stride(0), int8_weight.data_ptr<int8_t>(),
                          int8_scales.data_ptr<float>(),
                          int8_column_sums.data_ptr<int32_t>());
  packed = at::Tensor();  // the products run in int8 now
}

Linear Linear::Columns(int64_t begin, int64_t count) const {
  Linear columns{weight_t.narrow(1, begin, count),
                 bias.narrow(0, begin, count)};
  // Columns [begin, begin + count) are panels begin / P onwards, whose last
  // may run past count: the tiles compute such columns and store none.
  const int64_t panel = cpu::PanelColumns(packed_for);
  if (packed.defined() && panel > 0 && begin % panel == 0) {
    const int64_t offset = begin * weight_t.size(0);
    columns.packed = packed.narrow(0, offset, packed.numel() - offset);
    columns.packed_for = packed_for;
  }
  if (int8_weight.defined()) {
    // Whole panels only (of 8 columns: every part and head group of the
    // models Favor serves); a slice starting inside one runs in float32.
    if (begin % cpu::kInt8PanelColumns == 0) {
      const int64_t offset =
          begin * cpu::Int8PaddedDepth(weight_t.size(0));
      columns.int8_weight =
          int8_weight.narrow(0, offset, int8_weight.numel() - offset);
      columns.int8_scales = int8_scales.narrow(0, begin, count);
      columns.int8_column_sums = int8_column_sums.narrow(0, begin, count);
    }
  }
  return columns;
}

namespace {

// Whether LibTorch hands bfloat16 products to oneDNN (float32 sums), which
// has bfloat16 kernels only on CPUs with AVX-512 (emulated without
// AVX512-BF16; mkldnn_bf16_device_check). Favor refuses bfloat16 on a CPU
// without AVX512-BF16 for speed, but a model forced to it (tests) must still
// sum in float32.
bool OneDnnRunsBFloat16() {
  static const bool runs = [] {
    const cpu::CpuFeatures features = cpu::DetectedCpuFeatures();
    return features.avx512f && features.avx512bw && features.avx512vl;
  }();
  return runs;
}

// x Wᵀ + b for x of at least kMinProductRows rows.
at::Tensor Product(const at::Tensor& x, const at::Tensor& weight_t,
                   const at::Tensor& bias) {
  // LibTorch 1.13 hands a bfloat16 product to oneDNN (float32 sums) only
  // when rows · in · out > 16³ (mkldnn/Matmul.cpp, checksize) and the CPU
  // has oneDNN's bfloat16 kernels; otherwise its fallback sums in bfloat16
  // (measured: 2% off at depth 32). Such products run in float32.
  constexpr int64_t kSmallestOneDnnProduct = 16 * 16 * 16;
  if (x.scalar_type() == at::kBFloat16 &&
      (!OneDnnRunsBFloat16() ||
       x.size(0) * weight_t.size(0) * weight_t.size(1) <=
           kSmallestOneDnnProduct)) {
    return at::addmm(bias.to(at::kFloat), x.to(at::kFloat),
                     weight_t.to(at::kFloat))
        .to(at::kBFloat16);
  }
  return at::addmm(bias, x, weight_t);
}

// Whether y = x·W + b runs on cpu::Gemm: float32 on the CPU with its
// register tiles, every operand's rows contiguous. The BLAS would pack W
// again for every row block (a fifth of the product's time at 256 rows).
// (`out` too, when given.)
bool OnTileGemm(const at::Tensor& x, const at::Tensor& weight_t,
                const at::Tensor& bias, const at::Tensor* out = nullptr) {
  return cpu::GemmIsFast() && x.is_cpu() &&
         x.scalar_type() == at::kFloat &&
         weight_t.scalar_type() == at::kFloat &&
         bias.scalar_type() == at::kFloat && x.dim() == 2 && x.stride(1) == 1 &&
         weight_t.stride(1) == 1 && bias.stride(0) == 1 &&
         (out == nullptr ||
          (out->scalar_type() == at::kFloat && out->stride(1) == 1));
}

// Whether y = x·W + b runs in int8: the layer was quantised (kInt8) and x,
// the bias and `out` are float32 rows on the CPU.
bool OnInt8Gemm(const Linear& layer, const at::Tensor& x,
                const at::Tensor* out = nullptr) {
  return layer.int8_weight.defined() && x.is_cpu() &&
         x.scalar_type() == at::kFloat && x.dim() == 2 && x.stride(1) == 1 &&
         layer.bias.scalar_type() == at::kFloat && layer.bias.stride(0) == 1 &&
         (out == nullptr ||
          (out->scalar_type() == at::kFloat && out->stride(1) == 1));
}

// out (+)= x·W + b in int8: x's rows quantised into a scratch buffer, then
// cpu::GemmInt8 on the layer's quantised weight.
void Int8Product(const Linear& layer, const at::Tensor& x, at::Tensor& out,
                 bool accumulate) {
  const int64_t rows = x.size(0), depth = x.size(1);
  const int64_t cols = layer.weight_t.size(1);
  const int64_t stride = cpu::Int8PaddedDepth(depth);
  // Bytes, then the rows' scales and zero points (4-byte aligned: stride is
  // a multiple of 4).
  at::Tensor scratch = at::empty({rows * (stride + 8)}, at::kByte);
  uint8_t* q = scratch.data_ptr<uint8_t>();
  auto* scales = reinterpret_cast<float*>(q + rows * stride);
  auto* zero_points = reinterpret_cast<int32_t*>(scales + rows);
  cpu::QuantizeRowsInt8(rows, depth, x.data_ptr<float>(), x.stride(0), q,
                        stride, scales, zero_points);
  cpu::GemmInt8(rows, cols, depth, {q, stride, scales, zero_points},
                {layer.int8_weight.data_ptr<int8_t>(),
                 layer.int8_scales.data_ptr<float>(),
                 layer.int8_column_sums.data_ptr<int32_t>()},
                out.data_ptr<float>(), out.stride(0), accumulate,
                layer.bias.data_ptr<float>());
}

// out (+)= x·W + b on the tiles, on the packed W when it was packed for the
// kernel that runs now.
void TileProduct(const Linear& layer, const at::Tensor& x, at::Tensor& out,
                 bool accumulate,
                 cpu::Epilogue epilogue = cpu::Epilogue::kNone) {
  const at::Tensor& w = layer.weight_t;
  const cpu::MatrixView a{x.data_ptr<float>(), x.stride(0), 1};
  if (layer.packed.defined() &&
      layer.packed_for == cpu::ActiveGemmKernel()) {
    cpu::GemmPackedB(x.size(0), w.size(1), x.size(1), a,
                     layer.packed.data_ptr<float>(), layer.packed_for,
                     out.data_ptr<float>(), out.stride(0), accumulate,
                     layer.bias.data_ptr<float>(), epilogue);
    return;
  }
  cpu::Gemm(x.size(0), w.size(1), x.size(1), a, w.data_ptr<float>(),
            w.stride(0), out.data_ptr<float>(), out.stride(0), accumulate,
            layer.bias.data_ptr<float>(), epilogue);
}

// x padded with zero rows to kMinProductRows; x itself when it has enough.
at::Tensor Padded(const at::Tensor& x) {
  if (x.size(0) >= kMinProductRows) return x;
  at::Tensor padded = at::zeros({kMinProductRows, x.size(1)}, x.options());
  padded.narrow(0, 0, x.size(0)).copy_(x);
  return padded;
}

}  // namespace

at::Tensor Linear::operator()(const at::Tensor& x) const {
  if (OnInt8Gemm(*this, x)) {
    at::Tensor out = at::empty({x.size(0), weight_t.size(1)}, x.options());
    Int8Product(*this, x, out, /*accumulate=*/false);
    return out;
  }
  if (OnTileGemm(x, weight_t, bias)) {
    at::Tensor out = at::empty({x.size(0), weight_t.size(1)}, x.options());
    TileProduct(*this, x, out, /*accumulate=*/false);
    return out;
  }
  const at::Tensor y = Product(Padded(x), weight_t, bias);
  return y.size(0) == x.size(0) ? y : y.narrow(0, 0, x.size(0));
}

void Linear::AddInto(const at::Tensor& x, at::Tensor& out) const {
  if (OnInt8Gemm(*this, x, &out)) {
    Int8Product(*this, x, out, /*accumulate=*/true);
  } else if (OnTileGemm(x, weight_t, bias, &out)) {
    TileProduct(*this, x, out, /*accumulate=*/true);
  } else {
    out.add_((*this)(x));
  }
}

void Linear::Into(const at::Tensor& x, at::Tensor& out) const {
  if (OnInt8Gemm(*this, x, &out)) {
    Int8Product(*this, x, out, /*accumulate=*/false);
  } else if (OnTileGemm(x, weight_t, bias, &out)) {
    TileProduct(*this, x, out, /*accumulate=*/false);
  } else if (x.size(0) >= kMinProductRows && x.scalar_type() == at::kFloat) {
    at::addmm_out(out, bias, x, weight_t);
  } else {
    out.copy_((*this)(x));
  }
}

at::Tensor Linear::Activated(const at::Tensor& x,
                             Activation activation) const {
  if (activation == Activation::kGelu && cpu::GemmFusesGelu() &&
      !OnInt8Gemm(*this, x) && OnTileGemm(x, weight_t, bias)) {
    at::Tensor out = at::empty({x.size(0), weight_t.size(1)}, x.options());
    TileProduct(*this, x, out, /*accumulate=*/false, cpu::Epilogue::kGelu);
    return out;
  }
  at::Tensor out = (*this)(x);
  ActivateInPlace(activation, out);
  return out;
}

at::Tensor Norm::operator()(const at::Tensor& x) const {
  if (identity()) return x;
  if (type == NormType::kLayerNorm) {
    return at::layer_norm(x, {x.size(-1)}, weight, bias, eps);
  }
  // ‖x‖ in float32: a float16 sum of squares overflows at modest widths.
  const at::Tensor x32 = x.to(at::kFloat);
  const at::Tensor norm =
      at::linalg_vector_norm(x32, 2, {-1}, /*keepdim=*/true).clamp_min(eps);
  return (x32 * (scale.to(at::kFloat) / norm)).to(x.scalar_type());
}

void Norm::InPlace(at::Tensor& x) const {
  if (identity()) return;
  if (type == NormType::kLayerNorm && weight.defined() && bias.defined() &&
      x.is_cpu() && x.scalar_type() == at::kFloat &&
      weight.scalar_type() == at::kFloat && bias.scalar_type() == at::kFloat &&
      x.dim() == 2 && x.stride(1) == 1 && weight.is_contiguous() &&
      bias.is_contiguous()) {
    LayerNormRowsInPlace(x.data_ptr<float>(), x.size(0), x.size(1), x.stride(0),
                         weight.data_ptr<float>(), bias.data_ptr<float>(),
                         static_cast<float>(eps));
    return;
  }
  x.copy_((*this)(x));
}

void ActivateInPlace(Activation activation, at::Tensor& x) {
  switch (activation) {
    case Activation::kGelu:
      at::gelu_(x, "none");
      return;
    case Activation::kGeluTanh:
      at::gelu_(x, "tanh");
      return;
    case Activation::kRelu:
      x.relu_();
      return;
    case Activation::kSilu:
      at::silu_(x);
      return;
  }
}

at::Tensor GatedActivation(Activation activation, const at::Tensor& inner) {
  const int64_t width = inner.size(-1) / 2;
  at::Tensor activated = inner.narrow(-1, 0, width).contiguous();
  ActivateInPlace(activation, activated);
  return activated.mul_(inner.narrow(-1, width, width));
}

namespace {

// position_t · base^(−2i/d), (T, d/2) double: the angles in double
// precision, because a float32 product p · θ_i loses the angle's fractional
// part at the long lengths rotary models accept.
at::Tensor RotaryAngleTable(const at::Tensor& positions, int64_t head_dim,
                            double base) {
  const int64_t half = head_dim / 2;
  const auto double_options = positions.options().dtype(at::kDouble);
  // base^(−2i/d) = exp(−(2i/d) ln base)
  const at::Tensor inverse_frequency =
      at::exp(at::arange(half, double_options) *
              (-2.0 * std::log(base) / static_cast<double>(head_dim)));
  return positions.to(at::kDouble).unsqueeze(1) *
         inverse_frequency.unsqueeze(0);
}

}  // namespace

RotaryTables MakeRotaryTables(const at::Tensor& positions, int64_t head_dim,
                              double base) {
  const at::Tensor angles = RotaryAngleTable(positions, head_dim, base);
  return {at::cos(angles).to(at::kFloat), at::sin(angles).to(at::kFloat)};
}

RotaryAngles::RotaryAngles(const at::Tensor& positions, int64_t head_dim,
                           double base, int64_t max_table_bytes,
                           const RotaryTables* first_positions)
    : positions_(positions) {
  const int64_t table_bytes =
      positions.numel() * head_dim * static_cast<int64_t>(sizeof(float));
  const int64_t largest =
      positions.numel() == 0 ? 0 : positions.max().item<int64_t>();
  if (table_bytes <= max_table_bytes) {
    if (first_positions != nullptr && largest < first_positions->cos.size(0)) {
      whole_ = {first_positions->cos.index_select(0, positions),
                first_positions->sin.index_select(0, positions)};
    } else {
      whole_ = MakeRotaryTables(positions, head_dim, base);
    }
    return;
  }
  stride_ = static_cast<int64_t>(std::ceil(std::sqrt(largest + 1.0)));
  const auto long_options = positions.options().dtype(at::kLong);
  const at::Tensor low =
      RotaryAngleTable(at::arange(stride_, long_options), head_dim, base);
  const at::Tensor high = RotaryAngleTable(
      at::arange(largest / stride_ + 1, long_options) * stride_, head_dim,
      base);
  low_cos_ = at::cos(low);
  low_sin_ = at::sin(low);
  high_cos_ = at::cos(high);
  high_sin_ = at::sin(high);
}

RotaryTables RotaryAngles::Rows(int64_t begin, int64_t count) const {
  if (whole_.cos.defined()) {
    return {whole_.cos.narrow(0, begin, count),
            whole_.sin.narrow(0, begin, count)};
  }
  const at::Tensor p = positions_.narrow(0, begin, count);
  const at::Tensor low = p.remainder(stride_), high = p.div(stride_, "floor");
  const at::Tensor lc = low_cos_.index_select(0, low);
  const at::Tensor ls = low_sin_.index_select(0, low);
  const at::Tensor hc = high_cos_.index_select(0, high);
  const at::Tensor hs = high_sin_.index_select(0, high);
  return {(lc * hc - ls * hs).to(at::kFloat),
          (ls * hc + lc * hs).to(at::kFloat)};
}

void ApplyRotaryInPlace(at::Tensor x, const at::Tensor& cos,
                        const at::Tensor& sin) {
  const int64_t half = x.size(2) / 2;
  if (x.is_cpu() && x.scalar_type() == at::kFloat &&
      cos.scalar_type() == at::kFloat && sin.scalar_type() == at::kFloat &&
      x.stride(2) == 1 && x.stride(1) == x.size(2) && cos.is_contiguous() &&
      sin.is_contiguous()) {
    RotateHalfInPlace(x.data_ptr<float>(), x.size(0), x.size(1), x.size(2),
                      x.stride(0), cos.data_ptr<float>(),
                      sin.data_ptr<float>());
    return;
  }
  at::Tensor first = x.narrow(2, 0, half);
  at::Tensor second = x.narrow(2, half, half);
  const at::Tensor c = cos.unsqueeze(1).to(x.scalar_type());
  const at::Tensor s = sin.unsqueeze(1).to(x.scalar_type());
  const at::Tensor rotated_first = first * c - second * s;
  second.copy_(second * c + first * s);
  first.copy_(rotated_first);
}

}  // namespace favor::model::internal
