#include "client/cli/tool_main.h"

#include <cstdio>

#include "absl/status/statusor.h"
#include "client/cli/exit_code.h"
#include "client/cli/flag_parsing.h"

namespace favor::cli {

int RunToolMain(
    int argc, char** argv, absl::string_view program,
    absl::Span<const absl::string_view> flags_files,
    absl::FunctionRef<absl::Status(const std::vector<std::string>&)> run) {
  absl::StatusOr<ParsedCommandLine> parsed = ParseFlags(argc, argv);
  if (!parsed.ok()) return ReportAndExitCode(program, parsed.status());
  if (parsed->help) {
    std::printf("%s", FlagsUsage(flags_files).c_str());
    return 0;
  }
  return ReportAndExitCode(program, run(parsed->positional));
}

}  // namespace favor::cli
