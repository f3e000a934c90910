#include "client/cli/tool_main.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "client/cli/exit_code.h"
#include "client/cli/flag_parsing.h"

namespace favor::cli {
namespace {

// The errno of the first write to stdout that failed, 0 while none has:
// stdio keeps only a flag, and by the time the tool ends errno has moved
// on (a later call's ENOENT reported a full disk as a missing file).
int first_write_error = 0;

ssize_t WriteToStdout(void*, const char* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t wrote = ::write(STDOUT_FILENO, data + done, size - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      if (first_write_error == 0) first_write_error = wrote < 0 ? errno : EIO;
      return -1;
    }
    done += static_cast<size_t>(wrote);
  }
  return static_cast<ssize_t>(size);
}

// stdout's writes through WriteToStdout, buffered as stdio buffers a
// terminal (by line) or anything else (by block). The tools print with
// stdio only.
void WatchStdoutWrites() {
  cookie_io_functions_t io{};
  io.write = WriteToStdout;
  FILE* watched = fopencookie(nullptr, "w", io);
  if (watched == nullptr) return;  // keep the plain stream
  std::setvbuf(watched, nullptr, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF,
               BUFSIZ);
  std::fflush(stdout);
  stdout = watched;
}

}  // namespace

int RunToolMain(
    int argc, char** argv, absl::string_view program,
    absl::Span<const absl::string_view> flags_files,
    absl::FunctionRef<absl::Status(const std::vector<std::string>&)> run) {
  WatchStdoutWrites();
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
    const int error = first_write_error != 0 ? first_write_error : errno;
    if (status.ok()) {
      status = absl::DataLossError(absl::StrCat(
          "cannot write the output to stdout: ", std::strerror(error)));
    }
  }
  return ReportAndExitCode(program, status);
}

}  // namespace favor::cli
