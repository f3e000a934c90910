#include "server/model/model.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "server/attention/cpu_features.h"
#include "server/attention/device.h"
#include "server/attention/torch_status.h"
#include "server/common/status_macros.h"
#include "server/model/encoder.h"
#include "server/model/encoder_weights.h"
#include "server/model/model_folder.h"
#include "server/model/model_tokenizer.h"
#include "server/model/pooling.h"
#include "server/model/safetensors.h"
#include "server/model/weight_layout.h"

namespace favor::model {
namespace {

using internal::Encoder;
using internal::PackedVectors;

// Nothing thrown by LibTorch leaves this module (torch_status::Guarded).
using torch_status::Guarded;

at::ScalarType ScalarTypeOf(ComputeDType dtype) {
  switch (dtype) {
    case ComputeDType::kBFloat16:
      return at::kBFloat16;
    case ComputeDType::kFloat16:
      return at::kHalf;
    case ComputeDType::kFloat32:
    case ComputeDType::kInt8:  // float32 but in the linear layers' products
      break;
  }
  return at::kFloat;
}

absl::StatusOr<c10::Device> ParseDevice(const ModelOptions& options) {
  if (options.device == "cpu") {
    if (options.dtype == ComputeDType::kFloat16) {
      return absl::InvalidArgumentError(
          "dtype float16 needs a CUDA device; CPU models run in float32 or "
          "bfloat16");
    }
    if (options.dtype == ComputeDType::kBFloat16) {
      RETURN_IF_ERROR(attention::cpu::CheckBFloat16Support());
    }
    if (options.dtype == ComputeDType::kInt8) {
      RETURN_IF_ERROR(attention::cpu::CheckInt8Support());
    }
  } else if (options.dtype == ComputeDType::kInt8) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dtype int8 runs on the CPU (AVX2); device '", options.device,
        "' takes float32, bfloat16 or float16"));
  }
  return attention::ParseDevice(options.device);
}

absl::Status CheckModelOptions(const ModelOptions& options) {
  if (options.attention_chunk_tokens < 1 || options.cpu_block_tokens < 1 ||
      options.gpu_block_tokens < 1 || options.max_attention_pass_bytes < 1 ||
      options.max_rotary_table_bytes < 0 || options.cpu_sub_batch_tokens < 0) {
    return absl::InvalidArgumentError(
        "ModelOptions: attention_chunk_tokens, cpu_block_tokens, "
        "gpu_block_tokens and max_attention_pass_bytes must be at least 1, "
        "max_rotary_table_bytes and cpu_sub_batch_tokens at least 0");
  }
  return absl::OkStatus();
}

// The base name of a model folder, its name in the API.
std::string ModelName(const std::string& directory) {
  std::filesystem::path path(directory);
  if (!path.has_filename()) path = path.parent_path();  // trailing '/'
  return path.filename().string();
}

class TorchModel final : public Model {
 public:
  TorchModel(ModelDescription description, Encoder encoder, c10::Device device)
      : description_(std::move(description)),
        encoder_(std::move(encoder)),
        device_(device) {}

  const ModelDescription& description() const override { return description_; }

  absl::StatusOr<Embeddings> Embed(absl::Span<const int32_t> token_ids,
                                   absl::Span<const int64_t> offsets,
                                   const EmbedOptions& options) const override;

 private:
  absl::StatusOr<Embeddings> Compute(absl::Span<const int32_t> token_ids,
                                     absl::Span<const int64_t> offsets,
                                     Pooling pooling, bool normalize,
                                     bool include_token_vectors) const;

  const ModelDescription description_;
  const Encoder encoder_;
  const c10::Device device_;
};

absl::StatusOr<Embeddings> TorchModel::Embed(
    absl::Span<const int32_t> token_ids, absl::Span<const int64_t> offsets,
    const EmbedOptions& options) const {
  RETURN_IF_ERROR(ValidatePackedInput(config(), token_ids, offsets));
  const Pooling pooling = options.pooling.value_or(config().pooling);
  if (pooling == Pooling::kAttention && !description_.has_attention_pooling) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pooling \"attention\" needs the tensor pooler.query, which model '",
        name(), "' does not have"));
  }
  const bool normalize = options.normalize.value_or(config().normalize);
  return Guarded(absl::StrCat("model '", name(), "'"), [&] {
    return Compute(token_ids, offsets, pooling, normalize,
                   options.include_token_vectors);
  });
}

// `rows` (any float dtype, any device) into `out` as float32, row-major.
void CopyToHost(const at::Tensor& rows, std::vector<float>* out) {
  const at::Tensor host = rows.to(at::kCPU, at::kFloat).contiguous();
  out->resize(host.numel());
  std::memcpy(out->data(), host.data_ptr<float>(),
              host.numel() * sizeof(float));
}

absl::StatusOr<Embeddings> TorchModel::Compute(
    absl::Span<const int32_t> token_ids, absl::Span<const int64_t> offsets,
    Pooling pooling, bool normalize, bool include_token_vectors) const {
  c10::InferenceMode inference_mode;
  const int64_t count = static_cast<int64_t>(token_ids.size());
  at::Tensor ids = at::empty({count}, at::kLong);
  int64_t* id = ids.data_ptr<int64_t>();
  for (int64_t t = 0; t < count; ++t) id[t] = token_ids[t];
  ASSIGN_OR_RETURN(PackedVectors vectors,
                   encoder_.Forward(ids.to(device_), offsets));
  PackedVectors pooled =  // float32, whatever the model's dtype
      internal::Pool(vectors, pooling, encoder_.weights().pooler_query);
  Embeddings embeddings;
  if (include_token_vectors && pooling != Pooling::kNone) {
    embeddings.token_row_offsets = std::move(vectors.offsets);
    CopyToHost(vectors.values, &embeddings.token_vectors);
  }
  vectors = {};  // freed before the pooled rows are copied out
  if (normalize) internal::NormalizeRows(pooled.values);
  embeddings.dim = pooled.values.size(1);
  embeddings.row_offsets = std::move(pooled.offsets);
  CopyToHost(pooled.values, &embeddings.values);
  return embeddings;
}

internal::EncoderOptions MakeEncoderOptions(const ModelConfig& config,
                                            const ModelOptions& options,
                                            c10::Device device) {
  internal::EncoderOptions encoder;
  encoder.attention = internal::AttentionOptionsFor(config);
  encoder.attention.chunk_tokens = options.attention_chunk_tokens;
  encoder.parallel_blocks = device.is_cpu();
  encoder.block_tokens =
      device.is_cpu() ? options.cpu_block_tokens : options.gpu_block_tokens;
  encoder.sub_batch_tokens = device.is_cpu() ? options.cpu_sub_batch_tokens : 0;
  encoder.max_attention_pass_bytes = options.max_attention_pass_bytes;
  encoder.max_rotary_table_bytes = options.max_rotary_table_bytes;
  return encoder;
}

ModelDescription Describe(const std::string& directory, ModelConfig config,
                          const ModelOptions& options, c10::Device device,
                          const internal::LoadedWeights& loaded) {
  ModelDescription description;
  description.name = ModelName(directory);
  description.directory = directory;
  description.device = device.str();
  description.dtype = options.dtype;
  description.parameter_count = loaded.parameter_count;
  description.num_stored_projections = loaded.num_stored_projections;
  description.has_attention_pooling = loaded.weights.pooler_query.defined();
  description.embedding_dim = config.hidden_size;
  description.vectors_per_sequence =
      config.block == BlockType::kCrossAttention ? config.num_latents : 0;
  description.num_features =
      config.attention.kernel == attention::Kernel::kSoftmaxExact
          ? 0
          : attention::FeatureCount(config.attention.kernel,
                                    config.attention.num_random_features,
                                    config.head_dim());
  description.memory = MemoryProfileOf(config);
  description.memory.value_bytes = at::elementSize(ScalarTypeOf(options.dtype));
  description.memory.max_attention_pass_bytes =
      options.max_attention_pass_bytes;
  description.memory.max_rotary_table_bytes = options.max_rotary_table_bytes;
  description.memory.block_tokens =
      device.is_cpu() ? options.cpu_block_tokens : options.gpu_block_tokens;
  description.sub_batch_tokens =
      device.is_cpu() ? options.cpu_sub_batch_tokens : 0;
  description.memory.num_threads = device.is_cpu() ? at::get_num_threads() : 1;
  description.memory.on_host = device.is_cpu();
  description.config = std::move(config);
  return description;
}

absl::StatusOr<std::unique_ptr<Model>> LoadOnDevice(
    const std::string& directory, ModelFolder folder,
    const ModelOptions& options, c10::Device device) {
  c10::InferenceMode inference_mode;
  ModelConfig config = std::move(folder.config);
  ASSIGN_OR_RETURN(std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                   LoadModelTokenizer(directory, config));
  if (tokenizer != nullptr) {
    RETURN_IF_ERROR(AdoptSpecialTokenIds(*tokenizer, &config));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file,
                   SafetensorsFile::Open(directory + "/model.safetensors"));
  ASSIGN_OR_RETURN(const WeightNaming naming,
                   PrepareWeights(folder, file.get()));
  RETURN_IF_ERROR(
      CheckTensors(*file, ExpectedWeights(config, naming), naming.ignore));
  ASSIGN_OR_RETURN(internal::LoadedWeights loaded,
                   internal::LoadEncoderWeights(
                       config, naming, *file, device,
                       ScalarTypeOf(options.dtype),
                       /*int8_linear_layers=*/options.dtype ==
                           ComputeDType::kInt8));
  internal::EncoderOptions encoder_options =
      MakeEncoderOptions(config, options, device);
  ModelDescription description =
      Describe(directory, config, options, device, loaded);
  description.tokenizer = std::move(tokenizer);
  description.prompts = std::move(folder.prompts);
  if (folder.format == FolderFormat::kHuggingFace) {
    description.architecture = folder.architecture;
  }
  description.default_prompt_name = std::move(folder.default_prompt_name);
  Encoder encoder(std::move(config), std::move(loaded.weights),
                  std::move(encoder_options));
  return std::make_unique<TorchModel>(std::move(description),
                                      std::move(encoder), device);
}

absl::Status CheckSequence(const ModelConfig& config,
                           absl::Span<const int64_t> offsets, size_t s) {
  const int64_t length = offsets[s + 1] - offsets[s];
  if (length < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "offsets[", s + 1, "] is ", offsets[s + 1],
        "; offsets must not decrease (offsets[", s, "] is ", offsets[s], ")"));
  }
  if (length == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sequence ", s,
                     " is empty; every sequence needs at "
                     "least 1 token"));
  }
  if (length > config.max_sequence_length) {
    return absl::InvalidArgumentError(
        absl::StrCat("sequence ", s, " has ", length, " tokens; the limit is ",
                     config.max_sequence_length, " (max_sequence_length)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view NameOf(ComputeDType dtype) {
  switch (dtype) {
    case ComputeDType::kBFloat16:
      return "bfloat16";
    case ComputeDType::kFloat16:
      return "float16";
    case ComputeDType::kInt8:
      return "int8";
    case ComputeDType::kFloat32:
      break;
  }
  return "float32";
}

absl::StatusOr<ComputeDType> ParseComputeDType(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "float32" || lower == "fp32") return ComputeDType::kFloat32;
  if (lower == "bfloat16" || lower == "bf16") return ComputeDType::kBFloat16;
  if (lower == "float16" || lower == "fp16") return ComputeDType::kFloat16;
  if (lower == "int8") return ComputeDType::kInt8;
  return absl::InvalidArgumentError(absl::StrCat(
      "dtype '", name,
      "' is not one of \"float32\", \"bfloat16\", \"float16\", \"int8\""));
}

absl::Status ValidatePackedInput(const ModelConfig& config,
                                 absl::Span<const int32_t> token_ids,
                                 absl::Span<const int64_t> offsets) {
  const int64_t count = static_cast<int64_t>(token_ids.size());
  if (offsets.size() < 2) {
    return absl::InvalidArgumentError(
        "offsets must list at least one sequence (2 entries: 0 and the token "
        "count)");
  }
  if (offsets.front() != 0 || offsets.back() != count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "offsets must start at 0 and end at the token count ", count, "; got ",
        offsets.front(), " and ", offsets.back()));
  }
  for (size_t s = 0; s + 1 < offsets.size(); ++s) {
    RETURN_IF_ERROR(CheckSequence(config, offsets, s));
  }
  for (int64_t t = 0; t < count; ++t) {
    if (token_ids[t] < 0 || token_ids[t] >= config.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "token_ids[", t, "] is ", token_ids[t], "; must be in [0, ",
          config.vocab_size, ") (vocab_size)"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateModelOptions(const ModelOptions& options) {
  RETURN_IF_ERROR(CheckModelOptions(options));
  return ParseDevice(options).status();
}

absl::StatusOr<std::unique_ptr<Model>> Model::Load(
    const std::string& directory, const ModelOptions& options) {
  RETURN_IF_ERROR(CheckModelOptions(options));
  ASSIGN_OR_RETURN(ModelFolder folder, ReadModelFolder(directory));
  // A Hugging Face folder's favor.json may choose its own dtype, which
  // must run on the device like the server's.
  ModelOptions own = options;
  if (!folder.dtype.empty()) {
    absl::StatusOr<ComputeDType> dtype = ParseComputeDType(folder.dtype);
    if (!dtype.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          directory, "/favor.json: ", dtype.status().message()));
    }
    own.dtype = *dtype;
  }
  ASSIGN_OR_RETURN(const c10::Device device, ParseDevice(own));
  return Guarded(absl::StrCat("loading model ", directory), [&] {
    return LoadOnDevice(directory, std::move(folder), own, device);
  });
}

}  // namespace favor::model
