// What the main() of favor-cli and favor-bench share once the usage message
// is set: parse the flags, answer --help, run, and turn the outcome into the
// exit code (exit_code.h).
#ifndef FAVOR_CLIENT_CLI_TOOL_MAIN_H_
#define FAVOR_CLIENT_CLI_TOOL_MAIN_H_

#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace favor::cli {

// Parses argv (ParseFlags): bad usage is one stderr line and exit code 3.
// --help prints FlagsUsage(flags_files) on stdout and returns 0. Otherwise
// returns ReportAndExitCode(program, run(the positional arguments)), or
// DATA_LOSS's code (15) when the run succeeded but stdout could not take
// its output (a full disk).
int RunToolMain(
    int argc, char** argv, absl::string_view program,
    absl::Span<const absl::string_view> flags_files,
    absl::FunctionRef<absl::Status(const std::vector<std::string>&)> run);

}  // namespace favor::cli

#endif  // FAVOR_CLIENT_CLI_TOOL_MAIN_H_
