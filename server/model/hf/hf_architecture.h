// The architectures Favor serves from a Hugging Face folder, one row each:
// which config.json names it (its "model_type" and "architectures"
// classes), the prefix its task models put before the encoder's weights,
// and the adapter that maps its config onto a ModelConfig. Adding an
// architecture is an adapter file (bert.cc, roberta.cc, ...) and a row of
// hf_architecture.cc; docs/models.md lists them with what was verified.
//
// No LibTorch.
#ifndef FAVOR_SERVER_MODEL_HF_HF_ARCHITECTURE_H_
#define FAVOR_SERVER_MODEL_HF_HF_ARCHITECTURE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/model/hf/hf_config.h"
#include "server/model/model_config.h"
#include "server/model/safetensors.h"

namespace favor::model::hf {

struct HfArchitecture {
  // config.json's "model_type".
  absl::string_view model_type;
  // The "architectures" classes whose weights hold this encoder (the base
  // model's and its task models'); the first is the name Favor reports.
  absl::Span<const absl::string_view> classes;
  // Where a task model's file holds the encoder ("bert.").
  absl::string_view weight_prefix;
  // Fills `config` (Favor's defaults on entry) from `hf`: the shape, norms,
  // positions and special ids, to run the model as it was trained: exact
  // softmax attention, up to its position table. INVALID_ARGUMENT naming
  // the field for a value Favor does not implement.
  absl::Status (*adapt)(const HfConfig& hf, ModelConfig* config);
  // The file's tensors as Favor's (names without the prefix) for an
  // adapted config; null when the names are BERT's already.
  std::vector<TensorAlias> (*aliases)(const ModelConfig& config) = nullptr;
  // Where the file keeps encoder tensors outside BERT's "embeddings." and
  // "encoder." (before renaming): a tensor left there unread is an error,
  // anything else (a task head) is ignored.
  absl::Span<const absl::string_view> encoder_roots = {};
};

absl::Span<const HfArchitecture> HfArchitectures();

// The row for `hf`'s "model_type"; INVALID_ARGUMENT listing the supported
// ones.
absl::StatusOr<const HfArchitecture*> FindHfArchitecture(const HfConfig& hf);

}  // namespace favor::model::hf

#endif  // FAVOR_SERVER_MODEL_HF_HF_ARCHITECTURE_H_
