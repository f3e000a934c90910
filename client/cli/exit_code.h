// How favor-cli and favor-bench end: the exit code is the gRPC status code
// of what went wrong (abseil's codes are gRPC's: 0 OK, 3 INVALID_ARGUMENT
// for bad usage or input, 4 DEADLINE_EXCEEDED, 5 NOT_FOUND, 14 UNAVAILABLE,
// 16 UNAUTHENTICATED, ...), and the error is one line on stderr, so that
// scripts and container health checks can act on both.
#ifndef FAVOR_CLIENT_CLI_EXIT_CODE_H_
#define FAVOR_CLIENT_CLI_EXIT_CODE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace favor::cli {

// The status code's number, 0 for OK.
int ExitCode(const absl::Status& status);

// "<program>: <CODE_NAME>: <message>" on one line: line breaks in the
// message become spaces. Empty for OK.
std::string ErrorLine(absl::string_view program, const absl::Status& status);

// Writes ErrorLine to stderr (nothing for OK) and returns ExitCode.
int ReportAndExitCode(absl::string_view program, const absl::Status& status);

}  // namespace favor::cli

#endif  // FAVOR_CLIENT_CLI_EXIT_CODE_H_
