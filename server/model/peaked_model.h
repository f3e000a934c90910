// Peaked copies of a model: its query and key weights scaled so that
// attention logits q·k/√d span about ±20 rather than the ±1 of a freshly
// initialised model. Attention that peaked magnifies the rounding of
// reduced-precision queries and keys (a logit of 20 moved by bfloat16's
// 2^-9 relative rounding moves its weight by 4%), so the bfloat16 checks ask that
// bfloat16 keeps the embeddings on such a model too (dtype_agreement.h,
// `favor-model compare --peak_logits`).
//
// LibTorch-free header; the implementation runs the encoder in float32 on
// the CPU to measure the logits.
#ifndef FAVOR_SERVER_MODEL_PEAKED_MODEL_H_
#define FAVOR_SERVER_MODEL_PEAKED_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace favor::model {

struct PeakedModelOptions {
  // Target of the largest |q·k|/√d of each layer on the probe input.
  double logit_span = 20.0;
  // Length of the probe input the logits are measured on.
  int64_t probe_tokens = 256;
};

// The largest |q·k|/√d over every head and pair of tokens of a probe input
// (ids spread over the vocabulary), per layer, of the model in `directory`,
// rotary positions applied. Encoder blocks only (INVALID_ARGUMENT for
// cross-attention and ISAB models); loading errors as Model::Load's.
absl::StatusOr<std::vector<double>> MeasureAttentionLogitSpans(
    const std::string& directory, int64_t probe_tokens);

// Writes `output_directory` (config.json and model.safetensors): a copy of
// the model in `source_directory` whose layer l has its query and key
// weights and biases scaled by √(logit_span / span_l), span_l measured as
// above on the source (scaled tensors written as F32, the others as
// stored). Layer l's scaling changes what later layers see, so the result
// is "about" the target: returns the spans measured on the copy.
absl::StatusOr<std::vector<double>> WritePeakedModel(
    const std::string& source_directory, const std::string& output_directory,
    const PeakedModelOptions& options = {});

}  // namespace favor::model

#endif  // FAVOR_SERVER_MODEL_PEAKED_MODEL_H_
