// Opens libfavor_sentencepiece.so, the module that holds libsentencepiece
// (sentencepiece_bridge.h says why it is a module), once per process, and
// loads SentencePiece models through it.
//
// Where the module is looked for, in order: beside the running executable,
// in <executable's folder>/../lib/favor/, in the build tree it was built in
// (so that tests and build/server/favor-server find it), then by its bare
// name on the dynamic linker's search path.
#ifndef FAVOR_SERVER_TOKENIZER_SENTENCEPIECE_MODULE_H_
#define FAVOR_SERVER_TOKENIZER_SENTENCEPIECE_MODULE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/tokenizer/sentencepiece_bridge.h"

namespace favor::tokenizer {

// The module's file name.
inline constexpr char kSentencePieceModuleName[] = "libfavor_sentencepiece.so";

// A processor for the serialized model `serialized`. FAILED_PRECONDITION,
// listing where it looked, when the module cannot be opened (the first
// failure is remembered: later calls give the same answer without trying
// again); INVALID_ARGUMENT with SentencePiece's message when the bytes are
// not a model. Thread-safe.
absl::StatusOr<std::unique_ptr<spm_bridge::Processor>>
LoadSentencePieceProcessor(const std::string& serialized);

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_SENTENCEPIECE_MODULE_H_
