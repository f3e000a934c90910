#include "server/model/random_model.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/attention/philox.h"
#include "server/common/status_macros.h"
#include "server/model/safetensors.h"
#include "server/model/weight_layout.h"

namespace favor::model {
namespace {

// FNV-1a: a tensor's stream id from its name, stable across releases.
uint64_t NameHash(absl::string_view name) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : name) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

bool IsNormTensor(absl::string_view name) {
  return absl::StrContains(name, "LayerNorm.") ||
         absl::StartsWith(name, "encoder.final_norm.");
}

std::vector<float> TensorValues(const ModelConfig& config,
                                const ExpectedTensor& tensor,
                                const RandomModelOptions& options) {
  int64_t count = 1;
  for (const int64_t dim : tensor.shape) count *= dim;
  std::vector<float> values(count);
  if (absl::EndsWith(tensor.name, ".scale")) {  // ScaleNorm's g
    std::fill(values.begin(), values.end(),
              static_cast<float>(std::sqrt(config.hidden_size)));
    return values;
  }
  attention::GaussianStream gaussian(options.seed, NameHash(tensor.name));
  const double offset =
      IsNormTensor(tensor.name) && absl::EndsWith(tensor.name, ".weight") ? 1.0
                                                                          : 0.0;
  for (float& value : values) {
    value = static_cast<float>(offset + options.init_std * gaussian.Next());
  }
  return values;
}

bool ShouldWrite(const ModelConfig& config, const ExpectedTensor& tensor,
                 const RandomModelOptions& options) {
  if (tensor.required) return true;
  if (tensor.name == "pooler.query") return options.write_pooler_query;
  return tensor.name == "embeddings.token_type_embeddings.weight";
}

absl::Status WriteTextFile(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      return absl::ErrnoToStatus(errno,
                                 absl::StrCat("cannot write ", temporary));
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot rename ", temporary, " to ",
                                            path, ": ", error.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteRandomModel(const ModelConfig& config,
                              const std::string& directory,
                              const RandomModelOptions& options) {
  RETURN_IF_ERROR(ValidateModelConfig(config));
  if (!std::isfinite(options.init_std) || options.init_std < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("init_std is ", options.init_std,
                     "; must be a finite number >= 0"));
  }
  // Every value is held before the file is written: refuse, rather than
  // die of std::bad_alloc, a model that does not fit in memory.
  int64_t num_values = 0;
  for (const ExpectedTensor& tensor : ExpectedWeights(config)) {
    if (!ShouldWrite(config, tensor, options)) continue;
    int64_t elements = 1;
    for (const int64_t size : tensor.shape) elements *= size;
    num_values += elements;
  }
  constexpr int64_t kMaxValues = int64_t{1} << 33;  // 32 GiB of float32
  if (num_values > kMaxValues) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the model has ", num_values, " weights (",
        num_values * 4 / (int64_t{1} << 30),
        " GiB as float32); a random model is written with at most ",
        kMaxValues));
  }
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot create model folder ", directory, ": ", error.message()));
  }
  std::vector<ExpectedTensor> tensors;
  std::vector<std::vector<float>> values;
  try {
    for (const ExpectedTensor& tensor : ExpectedWeights(config)) {
      if (!ShouldWrite(config, tensor, options)) continue;
      tensors.push_back(tensor);
      values.push_back(TensorValues(config, tensor, options));
    }
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the model's ", num_values,
                     " weights do not fit in this machine's memory"));
  }
  std::vector<TensorToWrite> to_write;
  for (size_t i = 0; i < tensors.size(); ++i) {
    to_write.push_back(
        {tensors[i].name, DType::kF32, tensors[i].shape,
         absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(values[i].data()),
                             values[i].size() * sizeof(float))});
  }
  RETURN_IF_ERROR(WriteSafetensors(
      directory + "/model.safetensors", to_write,
      {{"format", "pt"},
       {"favor_init",
        absl::StrCat("seed=", options.seed, " init_std=", options.init_std)}}));
  return WriteTextFile(directory + "/config.json", ModelConfigToJson(config));
}

}  // namespace favor::model
