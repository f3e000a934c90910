// Command-line parsing for favor-cli and favor-bench, on abseil's flag
// registry but with errors as a Status rather than absl::ParseCommandLine's
// exit(1) and multi-line report: the tools' exit codes mirror gRPC status
// codes, and bad usage must exit 3 (INVALID_ARGUMENT) with one stderr line.
// The flags themselves are defined in each tool's main.cc, and only there,
// but for the connection flags both tools share (connection_flags.h).
//
// Accepted forms: --name=value, --name value, -name..., --bool_flag,
// --nobool_flag, and "--" to end the flags. Every argument that is not a
// flag is positional, wherever it stands (so `favor-cli embed 1,2
// --model=m` works).
#ifndef FAVOR_CLIENT_CLI_FLAG_PARSING_H_
#define FAVOR_CLIENT_CLI_FLAG_PARSING_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace favor::cli {

struct ParsedCommandLine {
  // The positional arguments, program name excluded, in order.
  std::vector<std::string> positional;
  // --help (or -h, --helpfull) was given: print FlagsUsage and exit 0.
  bool help = false;
};

// INVALID_ARGUMENT "<message> (see --help)": bad usage of a tool.
absl::Status UsageError(absl::string_view message);

// Sets every flag given in argv[1..argc) and returns the rest.
// INVALID_ARGUMENT naming the argument for an unknown flag, a missing value
// or a value the flag's type does not accept.
absl::StatusOr<ParsedCommandLine> ParseFlags(int argc, char** argv);

// absl::ProgramUsageMessage(), then each flag defined in a source file whose
// path ends with one of `flags_file_suffixes` (a tool's main.cc and
// connection_flags.cc): name, help and default, sorted by name.
std::string FlagsUsage(absl::Span<const absl::string_view> flags_file_suffixes);
// The same for one file.
std::string FlagsUsage(absl::string_view flags_file_suffix);

}  // namespace favor::cli

#endif  // FAVOR_CLIENT_CLI_FLAG_PARSING_H_
