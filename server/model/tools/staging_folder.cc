#include "server/model/tools/staging_folder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"

namespace favor::model {

absl::StatusOr<std::string> MakeStagingFolder(const std::string& output) {
  std::filesystem::path target = std::filesystem::path(output);
  if (!target.has_filename()) target = target.parent_path();  // "dir/"
  std::error_code error;
  if (target.has_parent_path()) {
    std::filesystem::create_directories(target.parent_path(), error);
  }
  std::string pattern =
      (target.parent_path() / absl::StrCat(".", target.filename().string(),
                                           ".init-XXXXXX"))
          .string();
  if (error || ::mkdtemp(pattern.data()) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot create a folder beside ", output, ": ",
        error ? error.message() : std::strerror(errno)));
  }
  // mkdtemp's 0700, widened to what mkdir would have made under the umask.
  const mode_t umask_bits = ::umask(0);
  ::umask(umask_bits);
  ::chmod(pattern.c_str(), 0777 & ~umask_bits);
  return pattern;
}

absl::Status MoveModelInto(const std::string& staging,
                           const std::string& output) {
  std::error_code error;
  if (!std::filesystem::exists(output, error)) {
    std::filesystem::rename(staging, output, error);
  } else {
    std::vector<std::filesystem::path> files;
    for (const auto& entry :
         std::filesystem::directory_iterator(staging, error)) {
      files.push_back(entry.path());
    }
    std::stable_partition(files.begin(), files.end(), [](const auto& file) {
      return file.filename() != "config.json";
    });
    for (const std::filesystem::path& file : files) {
      if (error) break;
      std::filesystem::rename(file, std::filesystem::path(output) /
                                        file.filename(), error);
    }
  }
  if (error) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot move the model into ", output, ": ",
                     error.message()));
  }
  return absl::OkStatus();
}

}  // namespace favor::model
