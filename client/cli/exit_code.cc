#include "client/cli/exit_code.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"

namespace favor::cli {

int ExitCode(const absl::Status& status) {
  return static_cast<int>(status.code());
}

std::string ErrorLine(absl::string_view program, const absl::Status& status) {
  if (status.ok()) return "";
  std::string line =
      absl::StrCat(program, ": ", absl::StatusCodeToString(status.code()), ": ",
                   status.message());
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::replace(line.begin(), line.end(), '\r', ' ');
  return line;
}

int ReportAndExitCode(absl::string_view program, const absl::Status& status) {
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", ErrorLine(program, status).c_str());
  }
  return ExitCode(status);
}

}  // namespace favor::cli
