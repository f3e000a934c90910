// Fuzz target: the model config parser (server/model/model_config.h) on
// arbitrary config.json text. A config it accepts must survive the round
// trip: ModelConfigToJson's text parses again, to an equal config. The
// same text is also read as a Hugging Face config.json (each architecture's
// adapter, hf/hf_architecture.h) and as a favor.json overlay on the
// result: whatever they accept must validate.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "nlohmann/json.hpp"
#include "server/model/hf/hf_architecture.h"
#include "server/model/hf/hf_config.h"
#include "server/model/model_config.h"

namespace {

// The overlay's fields, as model_folder.cc allows them.
constexpr absl::string_view kOverlayFields[] = {
    "version", "attention", "max_sequence_length", "pooling", "normalize"};

void HuggingFace(const std::string& text) {
  nlohmann::json json = nlohmann::json::parse(text, nullptr,
                                              /*allow_exceptions=*/false);
  if (!json.is_object()) return;
  const favor::model::hf::HfConfig hf(std::move(json), "config.json");
  for (const auto& row : favor::model::hf::HfArchitectures()) {
    favor::model::ModelConfig config;
    if (!row.adapt(hf, &config).ok()) continue;
    if (!favor::model::ValidateModelConfig(config).ok()) continue;
    if (row.aliases != nullptr) row.aliases(config);
    // The same text as an overlay on what the adapter made.
    auto fields = favor::model::ApplyModelConfigOverlay(text, "favor.json",
                                                        kOverlayFields, &config);
    if (fields.ok() && !favor::model::ValidateModelConfig(config).ok()) {
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  HuggingFace(text);
  auto config = favor::model::ParseModelConfig(text, "config.json");
  if (!config.ok()) return 0;
  auto again = favor::model::ParseModelConfig(
      favor::model::ModelConfigToJson(*config), "round trip");
  if (!again.ok() || *again != *config) std::abort();
  return 0;
}
