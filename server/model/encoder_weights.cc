#include "server/model/encoder_weights.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/attention/projection.h"
#include "server/common/json_parse.h"
#include "server/common/status_macros.h"
#include "server/model/weight_layout.h"

namespace favor::model::internal {
namespace {

at::ScalarType ScalarTypeOf(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return at::kHalf;
    case DType::kBF16:
      return at::kBFloat16;
    case DType::kF64:
      return at::kDouble;
    case DType::kI64:
      return at::kLong;
    case DType::kI32:
      return at::kInt;
    case DType::kI16:
      return at::kShort;
    case DType::kI8:
      return at::kChar;
    case DType::kU8:
      return at::kByte;
    case DType::kBool:
      return at::kBool;
    case DType::kF32:
      break;
  }
  return at::kFloat;
}

// Puts each part of the layout in its place in EncoderWeights, reading the
// tensors and converting them to the target device and dtype, and counts
// what it read. The first failure is kept in status(), so that building the
// weights reads straight through and checks once at the end.
class WeightReader final : public WeightLayoutVisitor {
 public:
  WeightReader(const SafetensorsFile& file, const ModelConfig& config,
               c10::Device device, at::ScalarType dtype, bool int8_linear)
      : file_(file),
        config_(config),
        device_(device),
        dtype_(dtype),
        int8_linear_(int8_linear) {}

  void WordEmbeddings(const ExpectedTensor& tensor) override {
    weights_.word_embeddings = Get(tensor);
  }
  void PositionEmbeddings(const ExpectedTensor& tensor) override {
    weights_.position_embeddings = Get(tensor);
  }
  void TokenTypeEmbeddings(const ExpectedTensor& tensor) override {
    const at::Tensor types = Get(tensor);
    if (types.defined()) weights_.token_type_row = types[0].contiguous();
  }
  void EmbeddingsNorm(const NormTensors& norm) override {
    weights_.embeddings_norm = GetNorm(norm);
  }
  void Latents(const ExpectedTensor& tensor) override {
    weights_.latents = Get(tensor);
  }
  void InducingPoints(const ExpectedTensor& tensor) override {
    weights_.inducing_points.push_back(Get(tensor));
  }
  void InducedLayer(const LayerTensors& layer) override {
    weights_.induced.push_back(GetLayer(layer));
  }
  void Layer(const LayerTensors& layer) override {
    weights_.layers.push_back(GetLayer(layer));
  }
  void FinalNorm(const NormTensors& norm) override {
    weights_.final_norm = GetNorm(norm);
  }
  void PoolerQuery(const ExpectedTensor& tensor) override {
    weights_.pooler_query = Get(tensor, /*keep_float32=*/true);  // pooling.h
  }
  void Unused(const ExpectedTensor& tensor) override {
    consumed_.insert(tensor.name);
  }

  // INTERNAL unless every tensor of `layout` was consumed, and nothing else.
  absl::Status CheckConsumed(const std::vector<ExpectedTensor>& layout) const;
  // The weights read; status() must be OK.
  LoadedWeights Take() {
    return {std::move(weights_), parameter_count_, stored_projections_};
  }
  const absl::Status& status() const { return status_; }

 private:
  // Undefined when an optional tensor is absent (or on an error, kept).
  at::Tensor Get(const ExpectedTensor& tensor, bool keep_float32 = false);
  at::Tensor GetIf(const std::optional<ExpectedTensor>& tensor,
                   bool keep_float32 = false) {
    return tensor.has_value() ? Get(*tensor, keep_float32) : at::Tensor();
  }
  Linear GetLinear(const LinearTensors& linear);
  Norm GetNorm(const NormTensors& norm);
  at::Tensor GetProjection(const AttentionTensors& attention);
  AttentionWeights GetAttention(const AttentionTensors& attention);
  LayerWeights GetLayer(const LayerTensors& layer);

  const SafetensorsFile& file_;
  const ModelConfig& config_;
  const c10::Device device_;
  const at::ScalarType dtype_;
  const bool int8_linear_;
  EncoderWeights weights_;
  absl::Status status_;
  int64_t parameter_count_ = 0;
  int64_t stored_projections_ = 0;
  std::set<std::string, std::less<>> consumed_;
};

at::Tensor WeightReader::Get(const ExpectedTensor& tensor, bool keep_float32) {
  consumed_.insert(tensor.name);
  if (!tensor.required && !file_.Contains(tensor.name)) return at::Tensor();
  absl::StatusOr<TensorView> view = file_.Get(tensor.name);
  if (!view.ok()) {
    status_.Update(view.status());
    return at::Tensor();
  }
  parameter_count_ += view->num_elements();
  at::Tensor host = HostCopy(*view);
  // A NaN or an infinity would not fail a call: it would poison every
  // answer, or be absorbed unseen (NaN query and key weights answer as if
  // they were zero; a NaN embedding row answers "NaN" strings).
  // The sum (in double, which no float weight overflows) is finite exactly
  // when every element is: one pass, no mask the size of the tensor.
  if (!std::isfinite(host.sum(at::kDouble).item<double>())) {
    status_.Update(absl::InvalidArgumentError(absl::StrCat(
        "tensor '", tensor.name, "' holds NaN or infinite values")));
    return at::Tensor();
  }
  return host.to(device_, keep_float32 ? at::kFloat : dtype_);
}

Linear WeightReader::GetLinear(const LinearTensors& linear) {
  const at::Tensor weight = Get(linear.weight);
  // Without linear_bias the products start from zeros, as PyTorch's
  // bias=False layers do.
  const at::Tensor bias = linear.bias.has_value()
                              ? Get(*linear.bias)
                              : at::zeros({linear.weight.shape[0]},
                                          at::TensorOptions()
                                              .dtype(dtype_)
                                              .device(device_));
  if (!weight.defined() || !bias.defined()) return {};
  return {weight.t().contiguous(), bias};
}

Norm WeightReader::GetNorm(const NormTensors& tensors) {
  Norm norm;
  norm.type = config_.norm;
  norm.eps = config_.layer_norm_eps;
  // Norms run in float32 (encoder.h, Precision), so their weights are
  // kept in float32: a few vectors per layer.
  norm.scale = GetIf(tensors.scale, /*keep_float32=*/true);
  norm.weight = GetIf(tensors.weight, /*keep_float32=*/true);
  norm.bias = GetIf(tensors.bias, /*keep_float32=*/true);
  if (norm.weight.defined() && !tensors.bias.has_value()) {
    norm.bias = at::zeros_like(norm.weight);  // norm_bias false
  }
  return norm;
}

// The stored projection, or the draw with seed projection_seed + sublayer;
// undefined for kernels without one.
at::Tensor WeightReader::GetProjection(const AttentionTensors& tensors) {
  if (!tensors.projection.has_value()) return {};
  at::Tensor stored = Get(*tensors.projection, /*keep_float32=*/true);
  if (stored.defined()) {
    ++stored_projections_;
    return stored;
  }
  const AttentionConfig& attention = config_.attention;
  attention::ProjectionOptions options;
  options.num_features = attention.num_random_features;
  options.head_dim = config_.head_dim();
  options.orthogonal = attention.orthogonal;
  options.simplex = attention.simplex;
  options.row_norm = attention.row_norm;
  options.seed = attention.projection_seed + tensors.sublayer;
  absl::StatusOr<at::Tensor> drawn = attention::DrawProjection(options);
  if (!drawn.ok()) {
    status_.Update(drawn.status());
    return {};
  }
  return drawn->to(device_);
}

AttentionWeights WeightReader::GetAttention(const AttentionTensors& tensors) {
  AttentionWeights weights;
  const Linear q = GetLinear(tensors.query);
  const Linear k = GetLinear(tensors.key);
  const Linear v = GetLinear(tensors.value);
  if (q.weight_t.defined() && k.weight_t.defined() && v.weight_t.defined()) {
    weights.query_key_value = {
        at::cat({q.weight_t, k.weight_t, v.weight_t}, 1).contiguous(),
        at::cat({q.bias, k.bias, v.bias}, 0)};
  }
  weights.output = GetLinear(tensors.output);
  weights.projection = GetProjection(tensors);
  return weights;
}

LayerWeights WeightReader::GetLayer(const LayerTensors& tensors) {
  LayerWeights layer;
  layer.attention = GetAttention(tensors.attention);
  layer.attention_norm = GetNorm(tensors.attention_norm);
  layer.intermediate = GetLinear(tensors.intermediate);
  if (tensors.gate.has_value()) {
    // One (H, 2I) product for both halves (encoder.h, LayerWeights).
    const Linear gate = GetLinear(*tensors.gate);
    if (layer.intermediate.weight_t.defined() && gate.weight_t.defined()) {
      layer.intermediate = {
          at::cat({layer.intermediate.weight_t, gate.weight_t}, 1).contiguous(),
          at::cat({layer.intermediate.bias, gate.bias}, 0)};
    }
  }
  layer.output = GetLinear(tensors.output);
  layer.output_norm = GetNorm(tensors.output_norm);
  // The four products per token, packed for cpu::Gemm's tiles or
  // quantised for cpu::GemmInt8 once here.
  for (Linear* linear : {&layer.attention.query_key_value,
                         &layer.attention.output, &layer.intermediate,
                         &layer.output}) {
    if (int8_linear_) {
      linear->QuantizeInt8();
    } else {
      linear->PackForTiles();
    }
  }
  return layer;
}

absl::Status WeightReader::CheckConsumed(
    const std::vector<ExpectedTensor>& layout) const {
  std::set<absl::string_view> listed;
  for (const ExpectedTensor& tensor : layout) {
    listed.insert(tensor.name);
    if (consumed_.count(tensor.name) == 0) {
      return absl::InternalError(
          absl::StrCat("the weight loader did not read tensor ",
                       Quote(tensor.name), " of the layout (weight_layout.h)"));
    }
  }
  for (const std::string& name : consumed_) {
    if (listed.count(name) == 0) {
      return absl::InternalError(
          absl::StrCat("the weight loader read tensor ", Quote(name),
                       ", which the layout (weight_layout.h) does not list"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

at::Tensor HostCopy(const TensorView& view) {
  at::Tensor host = at::empty(
      view.shape, at::TensorOptions().dtype(ScalarTypeOf(view.dtype)));
  if (view.byte_size > 0)
    std::memcpy(host.data_ptr(), view.data, view.byte_size);
  return host;
}

absl::StatusOr<LoadedWeights> LoadEncoderWeights(const ModelConfig& config,
                                                 const WeightNaming& naming,
                                                 const SafetensorsFile& file,
                                                 c10::Device device,
                                                 at::ScalarType dtype,
                                                 bool int8_linear_layers) {
  WeightReader reader(file, config, device, dtype, int8_linear_layers);
  const std::vector<ExpectedTensor> layout =
      VisitWeightLayout(config, naming, reader);
  RETURN_IF_ERROR(reader.status());
  RETURN_IF_ERROR(reader.CheckConsumed(layout));
  return reader.Take();
}

}  // namespace favor::model::internal
