// Reading a whole file, for the files the tools' flags name (PEM files,
// token files, token id and tensor inputs), with one error for all of them.
#ifndef FAVOR_CLIENT_CLI_READ_FILE_H_
#define FAVOR_CLIENT_CLI_READ_FILE_H_

#include <string>

#include "absl/status/statusor.h"

namespace favor::cli {

// The whole content of the file at `path`, byte for byte; NOT_FOUND
// "cannot read '<path>'" when it cannot be opened or read.
absl::StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace favor::cli

#endif  // FAVOR_CLIENT_CLI_READ_FILE_H_
