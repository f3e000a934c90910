// Turns a checked model.safetensors into the encoder's tensors on a device.
// Implementation detail of server/model: includes ATen, not for other
// modules.
#ifndef FAVOR_SERVER_MODEL_ENCODER_WEIGHTS_H_
#define FAVOR_SERVER_MODEL_ENCODER_WEIGHTS_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "server/model/encoder.h"
#include "server/model/model_config.h"
#include "server/model/safetensors.h"
#include "server/model/weight_layout.h"

namespace favor::model::internal {

struct LoadedWeights {
  EncoderWeights weights;
  int64_t parameter_count = 0;         // elements read from the file
  int64_t num_stored_projections = 0;  // projections read, not drawn
};

// A host copy of one tensor of a safetensors file, in its stored dtype: a
// copy, not a view of the mapping, because the data may be unaligned (see
// TensorView) and a model must not depend on the file staying mapped.
at::Tensor HostCopy(const TensorView& view);

// Reads every tensor the config needs from `file`, named as `naming` says
// (already checked with CheckTensors against ExpectedWeights(config,
// naming)), and copies it to `device`
// in `dtype`; projections, norms and pooler.query stay float32. Projections the
// file lacks are drawn as docs/models.md, Projections, says. The tensors come
// from walking the weight layout (weight_layout.h); INTERNAL if the loader did
// not read exactly the tensors the layout lists. With `int8_linear_layers`
// (ComputeDType kInt8, dtype float32 on the CPU) each layer's four linear
// layers are also quantised for cpu::GemmInt8 (Linear::QuantizeInt8).
// May throw c10::Error.
absl::StatusOr<LoadedWeights> LoadEncoderWeights(
    const ModelConfig& config, const WeightNaming& naming,
    const SafetensorsFile& file, c10::Device device, at::ScalarType dtype,
    bool int8_linear_layers = false);

}  // namespace favor::model::internal

#endif  // FAVOR_SERVER_MODEL_ENCODER_WEIGHTS_H_
