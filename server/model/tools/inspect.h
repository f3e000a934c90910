// favor-model inspect: what a model folder holds (its format, the config
// as Favor runs it, every tensor, the weights checked against the config,
// the tokenizer), and the format line `verify` prints too.
#ifndef FAVOR_SERVER_MODEL_TOOLS_INSPECT_H_
#define FAVOR_SERVER_MODEL_TOOLS_INSPECT_H_

#include <string>

#include "absl/status/status.h"
#include "server/model/model_folder.h"

namespace favor::model {

// "format: ..." (and for a Hugging Face folder its architecture and
// overlay fields) on stdout.
void PrintFormat(const ModelFolder& folder);

// The whole report on stdout; the first error that stops it.
absl::Status Inspect(const std::string& directory);

}  // namespace favor::model

#endif  // FAVOR_SERVER_MODEL_TOOLS_INSPECT_H_
