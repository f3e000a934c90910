// favor-model init's staging: the model is written into a fresh folder
// beside its destination and moved in only once it and its tokenizer load,
// so that a failed init leaves nothing behind and a server polling the
// repository never meets half a model.
#ifndef FAVOR_SERVER_MODEL_TOOLS_STAGING_FOLDER_H_
#define FAVOR_SERVER_MODEL_TOOLS_STAGING_FOLDER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace favor::model {

// A new, empty folder ".<name>.init-XXXXXX" beside `output` (on the same
// file system, so that its files can be renamed into place), with the
// permissions mkdir would give it; `output`'s parent is made if missing.
absl::StatusOr<std::string> MakeStagingFolder(const std::string& output);

// The staged model into `output`: the folder renamed when `output` does
// not exist, otherwise file by file (each rename atomic), config.json last.
absl::Status MoveModelInto(const std::string& staging,
                           const std::string& output);

}  // namespace favor::model

#endif  // FAVOR_SERVER_MODEL_TOOLS_STAGING_FOLDER_H_
