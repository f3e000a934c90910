#include "client/cli/tool_main.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
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
  absl::Status status = run(parsed->positional);
  // Buffered output meets a full disk or a closed pipe only here; a script
  // must not take a truncated answer for a whole one.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    const int error = errno;
    if (status.ok()) {
      status = absl::DataLossError(absl::StrCat(
          "cannot write the output to stdout: ", std::strerror(error)));
    }
  }
  return ReportAndExitCode(program, status);
}

}  // namespace favor::cli
