// Reading a whole file, for the files the tools' flags name (PEM files,
// token files, token id and tensor inputs), with one error for all of them.
#ifndef FAVOR_CLIENT_CLI_READ_FILE_H_
#define FAVOR_CLIENT_CLI_READ_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace favor::cli {

// More than any input a tool sends (a server takes 64 MiB messages by
// default): /dev/zero fails instead of filling the memory.
inline constexpr int64_t kMaxFileBytes = int64_t{1} << 30;

// The whole content of the file at `path`, byte for byte. NOT_FOUND
// "cannot read '<path>': <why>" when it cannot be opened or read (a
// directory, an I/O error), RESOURCE_EXHAUSTED past `max_bytes`. Never
// throws.
absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     int64_t max_bytes = kMaxFileBytes);

}  // namespace favor::cli

#endif  // FAVOR_CLIENT_CLI_READ_FILE_H_
