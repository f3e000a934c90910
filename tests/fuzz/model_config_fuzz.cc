// Fuzz target: the model config parser (server/model/model_config.h) on
// arbitrary config.json text. A config it accepts must survive the round
// trip: ModelConfigToJson's text parses again, to an equal config.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "server/model/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto config = favor::model::ParseModelConfig(text, "config.json");
  if (!config.ok()) return 0;
  auto again = favor::model::ParseModelConfig(
      favor::model::ModelConfigToJson(*config), "round trip");
  if (!again.ok() || *again != *config) std::abort();
  return 0;
}
