// What the adapters share (adapters.h): Hugging Face's activation names,
// the config of a model run as trained, a fused query|key|value tensor.
#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/model/hf/adapters.h"

namespace favor::model::hf {

absl::StatusOr<Activation> ActivationNamed(const HfConfig& hf,
                                           absl::string_view key,
                                           absl::string_view fallback) {
  ASSIGN_OR_RETURN(const std::string act,
                   hf.String(key, std::string(fallback)));
  // transformers' ACT2FN: "gelu" is the exact (erf) GELU; "gelu_new",
  // "gelu_fast" and "gelu_pytorch_tanh" the tanh approximation.
  if (act == "gelu") return Activation::kGelu;
  if (act == "gelu_new" || act == "gelu_fast" || act == "gelu_pytorch_tanh") {
    return Activation::kGeluTanh;
  }
  if (act == "silu" || act == "swish") return Activation::kSilu;
  if (act == "relu") return Activation::kRelu;
  return hf.Error(key, absl::StrCat("is \"", act,
                                    "\"; Favor runs gelu, gelu_new, gelu_fast, "
                                    "gelu_pytorch_tanh, silu, swish and relu"));
}

void RunAsTrained(ModelConfig* config) {
  config->block = BlockType::kEncoder;
  config->attention = AttentionConfig();
  config->attention.kernel = attention::Kernel::kSoftmaxExact;
}

void AddFusedQueryKeyValue(const std::string& fused, const std::string& layer,
                           const std::string& kind,
                           std::vector<TensorAlias>* aliases) {
  int64_t part = 0;
  for (const char* name : {"query", "key", "value"}) {
    aliases->push_back({absl::StrCat(layer, "attention.self.", name, kind),
                        fused + kind, part++, 3});
  }
}

}  // namespace favor::model::hf
