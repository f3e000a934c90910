#include "server/model/encoder_weights.h"

#include <ATen/ATen.h>

#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/attention/projection.h"
#include "server/common/status_macros.h"

namespace favor::model::internal {
namespace {

at::ScalarType ScalarTypeOf(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return at::kHalf;
    case DType::kBF16:
      return at::kBFloat16;
    case DType::kF32:
      break;
  }
  return at::kFloat;
}

// Reads tensors by name, converting them to the target device and dtype,
// and counts what it read. The first failure is kept in status(), so that
// building the weights reads straight through and checks once at the end.
class WeightReader {
 public:
  WeightReader(const SafetensorsFile& file, const ModelConfig& config,
               c10::Device device, at::ScalarType dtype)
      : file_(file), config_(config), device_(device), dtype_(dtype) {}

  // A tensor CheckTensors found present; undefined (and an error kept) if
  // it is not.
  at::Tensor Get(const std::string& name, bool keep_float32 = false);
  // Undefined when the file has no such tensor.
  at::Tensor GetOptional(const std::string& name, bool keep_float32 = false) {
    return file_.Contains(name) ? Get(name, keep_float32) : at::Tensor();
  }
  Linear GetLinear(const std::string& prefix);
  Norm GetNorm(const std::string& prefix);
  AttentionWeights GetAttention(const std::string& prefix, uint64_t sublayer);
  LayerWeights GetLayer(const std::string& prefix, uint64_t sublayer);

  const absl::Status& status() const { return status_; }
  int64_t parameter_count() const { return parameter_count_; }
  int64_t num_stored_projections() const { return stored_projections_; }

 private:
  at::Tensor Projection(const std::string& prefix, uint64_t sublayer);

  const SafetensorsFile& file_;
  const ModelConfig& config_;
  const c10::Device device_;
  const at::ScalarType dtype_;
  absl::Status status_;
  int64_t parameter_count_ = 0;
  int64_t stored_projections_ = 0;
};

at::Tensor WeightReader::Get(const std::string& name, bool keep_float32) {
  absl::StatusOr<TensorView> view = file_.Get(name);
  if (!view.ok()) {
    status_.Update(view.status());
    return at::Tensor();
  }
  // A copy, not a view of the mapping: the data may be unaligned (see
  // TensorView), and the model must not depend on the file staying mapped.
  at::Tensor host = at::empty(
      view->shape, at::TensorOptions().dtype(ScalarTypeOf(view->dtype)));
  if (view->byte_size > 0) {
    std::memcpy(host.data_ptr(), view->data, view->byte_size);
  }
  parameter_count_ += view->num_elements();
  return host.to(device_, keep_float32 ? at::kFloat : dtype_);
}

Linear WeightReader::GetLinear(const std::string& prefix) {
  const at::Tensor weight = Get(prefix + ".weight");
  const at::Tensor bias = Get(prefix + ".bias");
  if (!weight.defined() || !bias.defined()) return {};
  return {weight.t().contiguous(), bias};
}

Norm WeightReader::GetNorm(const std::string& prefix) {
  Norm norm;
  norm.type = config_.norm;
  norm.eps = config_.layer_norm_eps;
  if (config_.norm == NormType::kScaleNorm) {
    norm.scale = Get(prefix + ".scale");
  } else {
    norm.weight = Get(prefix + ".weight");
    norm.bias = Get(prefix + ".bias");
  }
  return norm;
}

// The stored projection, or the draw with seed projection_seed + sublayer.
at::Tensor WeightReader::Projection(const std::string& prefix,
                                    uint64_t sublayer) {
  const AttentionConfig& attention = config_.attention;
  if (!attention::TraitsOf(attention.kernel).uses_projection) return {};
  at::Tensor stored =
      GetOptional(prefix + ".projection", /*keep_float32=*/true);
  if (stored.defined()) {
    ++stored_projections_;
    return stored;
  }
  attention::ProjectionOptions options;
  options.num_features = attention.num_random_features;
  options.head_dim = config_.head_dim();
  options.orthogonal = attention.orthogonal;
  options.row_norm = attention.row_norm;
  options.seed = attention.projection_seed + sublayer;
  absl::StatusOr<at::Tensor> drawn = attention::DrawProjection(options);
  if (!drawn.ok()) {
    status_.Update(drawn.status());
    return {};
  }
  return drawn->to(device_);
}

AttentionWeights WeightReader::GetAttention(const std::string& prefix,
                                            uint64_t sublayer) {
  AttentionWeights weights;
  const Linear q = GetLinear(prefix + ".self.query");
  const Linear k = GetLinear(prefix + ".self.key");
  const Linear v = GetLinear(prefix + ".self.value");
  if (q.weight_t.defined() && k.weight_t.defined() && v.weight_t.defined()) {
    weights.query_key_value = {
        at::cat({q.weight_t, k.weight_t, v.weight_t}, 1).contiguous(),
        at::cat({q.bias, k.bias, v.bias}, 0)};
  }
  weights.output = GetLinear(prefix + ".output.dense");
  weights.projection = Projection(prefix + ".self", sublayer);
  return weights;
}

LayerWeights WeightReader::GetLayer(const std::string& prefix,
                                    uint64_t sublayer) {
  LayerWeights layer;
  layer.attention = GetAttention(prefix + ".attention", sublayer);
  layer.attention_norm = GetNorm(prefix + ".attention.output.LayerNorm");
  layer.intermediate = GetLinear(prefix + ".intermediate.dense");
  layer.output = GetLinear(prefix + ".output.dense");
  layer.output_norm = GetNorm(prefix + ".output.LayerNorm");
  return layer;
}

void ReadEmbeddings(const ModelConfig& config, WeightReader& reader,
                    EncoderWeights& weights) {
  weights.word_embeddings = reader.Get("embeddings.word_embeddings.weight");
  if (config.position_embedding_type == PositionEmbedding::kAbsolute) {
    weights.position_embeddings =
        reader.Get("embeddings.position_embeddings.weight");
  }
  if (config.type_vocab_size > 0) {
    const at::Tensor types =
        reader.GetOptional("embeddings.token_type_embeddings.weight");
    if (types.defined()) weights.token_type_row = types[0].contiguous();
  }
  weights.embeddings_norm = reader.GetNorm("embeddings.LayerNorm");
}

void ReadLayers(const ModelConfig& config, WeightReader& reader,
                EncoderWeights& weights) {
  const bool isab = config.block == BlockType::kIsab;
  for (int64_t n = 0; n < config.num_hidden_layers; ++n) {
    const std::string prefix = absl::StrCat("encoder.layer.", n);
    const uint64_t layer = static_cast<uint64_t>(n);
    if (isab) {
      weights.inducing_points.push_back(
          reader.Get(prefix + ".inducing_points"));
      weights.induced.push_back(
          reader.GetLayer(prefix + ".induced", 2 * layer));
    }
    weights.layers.push_back(
        reader.GetLayer(prefix, isab ? 2 * layer + 1 : layer));
  }
}

}  // namespace

absl::StatusOr<LoadedWeights> LoadEncoderWeights(const ModelConfig& config,
                                                 const SafetensorsFile& file,
                                                 c10::Device device,
                                                 at::ScalarType dtype) {
  WeightReader reader(file, config, device, dtype);
  LoadedWeights loaded;
  EncoderWeights& weights = loaded.weights;
  ReadEmbeddings(config, reader, weights);
  if (config.block == BlockType::kCrossAttention) {
    weights.latents = reader.Get("encoder.latents");
  }
  ReadLayers(config, reader, weights);
  if (config.norm_placement == NormPlacement::kPre) {
    weights.final_norm = reader.GetNorm("encoder.final_norm");
  }
  weights.pooler_query = reader.GetOptional("pooler.query");
  RETURN_IF_ERROR(reader.status());
  loaded.parameter_count = reader.parameter_count();
  loaded.num_stored_projections = reader.num_stored_projections();
  return loaded;
}

}  // namespace favor::model::internal
