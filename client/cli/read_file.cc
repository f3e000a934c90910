#include "client/cli/read_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace favor::cli {

// stdio rather than a stream: libstdc++'s filebuf throws from underflow on
// a read error (EISDIR for a directory), whatever the exception mask.
absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     int64_t max_bytes) {
  const auto cannot = [&path](int error) {
    return absl::NotFoundError(
        absl::StrCat("cannot read '", path, "': ", std::strerror(error)));
  };
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(
      std::fopen(path.c_str(), "rb"), &std::fclose);
  if (file == nullptr) return cannot(errno);
  std::string content;
  char buffer[1 << 16];
  while (true) {
    const size_t got = std::fread(buffer, 1, sizeof(buffer), file.get());
    if (static_cast<int64_t>(content.size() + got) > max_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "'", path, "' is larger than ", max_bytes, " bytes"));
    }
    content.append(buffer, got);
    if (got < sizeof(buffer)) break;
  }
  if (std::ferror(file.get())) return cannot(errno);
  return content;
}

}  // namespace favor::cli
