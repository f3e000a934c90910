// LoadSentencePieceProcessor (sentencepiece_module.h) with libsentencepiece
// linked in rather than opened as a module: the fuzz build's
// (cmake/FavorFuzz.cmake), because AddressSanitizer cannot run code opened
// with RTLD_DEEPBIND. Safe only in a process that loads no other protobuf
// runtime (sentencepiece_bridge.h says why); favor-server uses the module.
#include <string>

#include "server/tokenizer/sentencepiece_module.h"

// Defined in sentencepiece_bridge.cc, compiled into the same binary.
extern "C" favor::tokenizer::spm_bridge::Processor* favor_sentencepiece_load(
    const std::string& serialized, std::string* error);

namespace favor::tokenizer {

absl::StatusOr<std::unique_ptr<spm_bridge::Processor>>
LoadSentencePieceProcessor(const std::string& serialized) {
  std::string error;
  std::unique_ptr<spm_bridge::Processor> processor(
      favor_sentencepiece_load(serialized, &error));
  if (processor == nullptr) return absl::InvalidArgumentError(error);
  return processor;
}

}  // namespace favor::tokenizer
