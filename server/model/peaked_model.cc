#include "server/model/model_folder.h"
#include "server/model/peaked_model.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/model/encoder.h"
#include "server/model/encoder_weights.h"
#include "server/model/model_config.h"
#include "server/model/safetensors.h"
#include "server/model/weight_layout.h"

namespace favor::model {
namespace {

using internal::Encoder;

// Layer l's query and key weights and biases: the BERT names of
// docs/models.md, "encoder.layer.<l>.attention.self.{query,key}.{weight,
// bias}" (ISAB's induced layers, "encoder.layer.<l>.induced...", are not
// matched). The scale of each, by name.
std::map<std::string, double> QueryKeyScales(
    const ModelConfig& config, const std::vector<double>& scales) {
  static const std::regex kQueryKey(
      R"(encoder\.layer\.(\d+)\.attention\.self\.(query|key)\.(weight|bias))");
  std::map<std::string, double> scale_of;
  for (const ExpectedTensor& tensor : ExpectedWeights(config)) {
    std::smatch match;
    if (!std::regex_match(tensor.name, match, kQueryKey)) continue;
    const size_t layer = std::stoul(match[1].str());
    if (layer < scales.size()) scale_of[tensor.name] = scales[layer];
  }
  return scale_of;
}

absl::StatusOr<ModelConfig> EncoderConfig(const std::string& directory) {
  ASSIGN_OR_RETURN(ModelFolder folder, ReadModelFolder(directory));
  if (folder.format != FolderFormat::kFavor) {
    return absl::InvalidArgumentError(absl::StrCat(
        directory, ": peaked copies are made of models in Favor's own "
                   "format; this is a Hugging Face folder"));
  }
  ModelConfig config = std::move(folder.config);
  if (config.block != BlockType::kEncoder) {
    return absl::InvalidArgumentError(
        absl::StrCat(directory, ": peaked copies are for \"encoder\" blocks; ",
                     "this model's block is ", NameOf(config.block)));
  }
  return config;
}

// Every layer's input on the probe, float32.
absl::StatusOr<std::vector<at::Tensor>> LayerInputs(const Encoder& encoder,
                                                    int64_t probe_tokens) {
  const ModelConfig& config = encoder.config();
  const int64_t length = std::min(probe_tokens, config.max_sequence_length);
  at::Tensor ids = at::arange(length, at::kLong).mul_(7919).add_(13);
  ids.remainder_(config.vocab_size);
  std::vector<at::Tensor> stages;
  const int64_t offsets[] = {0, length};
  RETURN_IF_ERROR(encoder
                      .Forward(ids, offsets,
                               [&](const at::Tensor& values) {
                                 stages.push_back(values.to(at::kFloat, true,
                                                            /*copy=*/true));
                               })
                      .status());
  stages.pop_back();  // the last layer's output is no layer's input
  return stages;
}

// Largest |q·k|/√d of one layer over its input x.
double LogitSpan(const Encoder& encoder, const internal::LayerWeights& layer,
                 const at::Tensor& x) {
  const ModelConfig& config = encoder.config();
  const int64_t hidden = config.hidden_size, d = config.head_dim();
  const at::Tensor in = config.norm_placement == NormPlacement::kPre
                            ? layer.attention_norm(x)
                            : x;
  const internal::Linear query_key =
      layer.attention.query_key_value.Columns(0, 2 * hidden);
  at::Tensor qk =
      query_key(in).view({x.size(0), 2 * config.num_attention_heads, d});
  if (config.position_embedding_type == PositionEmbedding::kRotary) {
    const internal::RotaryTables tables = internal::MakeRotaryTables(
        at::arange(x.size(0), at::kLong), d, config.rotary_base);
    internal::ApplyRotaryInPlace(qk, tables.cos, tables.sin);
  }
  const int64_t heads = config.num_attention_heads;
  const at::Tensor q = qk.narrow(1, 0, heads).transpose(0, 1);
  const at::Tensor k = qk.narrow(1, heads, heads).transpose(0, 1);
  const at::Tensor logits = at::bmm(q, k.transpose(1, 2)) / std::sqrt(d);
  return logits.abs().max().item<double>();
}

absl::StatusOr<std::vector<double>> MeasureSpans(const std::string& directory,
                                                 int64_t probe_tokens) {
  c10::InferenceMode inference_mode;
  ASSIGN_OR_RETURN(ModelConfig config, EncoderConfig(directory));
  ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file,
                   SafetensorsFile::Open(directory + "/model.safetensors"));
  RETURN_IF_ERROR(CheckTensors(*file, ExpectedWeights(config)));
  ASSIGN_OR_RETURN(
      internal::LoadedWeights loaded,
      internal::LoadEncoderWeights(config, {}, *file, c10::kCPU, at::kFloat));
  internal::EncoderOptions encoder_options;
  encoder_options.attention = internal::AttentionOptionsFor(config);
  const Encoder encoder(config, std::move(loaded.weights), encoder_options);
  ASSIGN_OR_RETURN(const std::vector<at::Tensor> inputs,
                   LayerInputs(encoder, probe_tokens));
  std::vector<double> spans;
  for (size_t l = 0; l < inputs.size(); ++l) {
    spans.push_back(LogitSpan(encoder, encoder.weights().layers[l], inputs[l]));
  }
  return spans;
}

// `view` times `scale`, as float32.
at::Tensor Scaled(const TensorView& view, double scale) {
  return internal::HostCopy(view).to(at::kFloat).mul_(scale).contiguous();
}

// Copies every tensor of `source`, the query and key tensors of layer l
// scaled by scales[l].
absl::Status WriteScaledCopy(const SafetensorsFile& source,
                             const ModelConfig& config,
                             const std::vector<double>& scales,
                             const std::string& path) {
  const std::map<std::string, double> scale_of = QueryKeyScales(config, scales);
  std::vector<at::Tensor> keep_alive;
  std::vector<TensorToWrite> tensors;
  for (const std::string& name : source.TensorNames()) {
    ASSIGN_OR_RETURN(const TensorView view, source.Get(name));
    TensorToWrite tensor{
        name,
        view.dtype,
        view.shape,
        {static_cast<const uint8_t*>(view.data), view.byte_size}};
    const auto it = scale_of.find(name);
    if (it != scale_of.end()) {
      keep_alive.push_back(Scaled(view, it->second));
      tensor.dtype = DType::kF32;
      tensor.bytes = {static_cast<const uint8_t*>(keep_alive.back().data_ptr()),
                      view.num_elements() * sizeof(float)};
    }
    tensors.push_back(std::move(tensor));
  }
  return WriteSafetensors(path, tensors);
}

}  // namespace

absl::StatusOr<std::vector<double>> MeasureAttentionLogitSpans(
    const std::string& directory, int64_t probe_tokens) {
  try {
    return MeasureSpans(directory, probe_tokens);
  } catch (const c10::Error& error) {
    return absl::InternalError(
        absl::StrCat("measuring the logits of ", directory,
                     " failed: ", error.what_without_backtrace()));
  }
}

absl::StatusOr<std::vector<double>> WritePeakedModel(
    const std::string& source_directory, const std::string& output_directory,
    const PeakedModelOptions& options) {
  ASSIGN_OR_RETURN(const ModelConfig config, EncoderConfig(source_directory));
  ASSIGN_OR_RETURN(
      const std::vector<double> spans,
      MeasureAttentionLogitSpans(source_directory, options.probe_tokens));
  std::vector<double> scales;
  for (const double span : spans) {
    scales.push_back(std::sqrt(options.logit_span / std::max(span, 1e-30)));
  }
  ASSIGN_OR_RETURN(
      std::unique_ptr<SafetensorsFile> file,
      SafetensorsFile::Open(source_directory + "/model.safetensors"));
  std::error_code error;
  std::filesystem::create_directories(output_directory, error);
  // The config, and the tokenizer file it names (if any), unchanged.
  for (const std::string& name :
       {std::string("config.json"), config.tokenizer.file}) {
    if (name.empty()) continue;
    std::filesystem::copy_file(
        source_directory + "/" + name, output_directory + "/" + name,
        std::filesystem::copy_options::overwrite_existing, error);
    if (error) {
      return absl::InternalError(absl::StrCat(
          "copying ", name, " to ", output_directory, ": ", error.message()));
    }
  }
  RETURN_IF_ERROR(WriteScaledCopy(*file, config, scales,
                                  output_directory + "/model.safetensors"));
  return MeasureAttentionLogitSpans(output_directory, options.probe_tokens);
}

}  // namespace favor::model
