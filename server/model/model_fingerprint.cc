#include "server/model/model_fingerprint.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/common/status_macros.h"
#include "server/model/model_folder.h"

namespace favor::model {
namespace {

namespace fs = std::filesystem;

// The folder's regular non-hidden files, by relative path.
std::vector<fs::path> FilesOf(const std::string& folder) {
  std::vector<fs::path> files;
  std::error_code error;
  fs::recursive_directory_iterator it(folder, error), end;
  for (; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (!name.empty() && name[0] == '.') {
      if (it->is_directory(error)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(error)) {
      files.push_back(fs::relative(it->path(), folder, error));
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A 64-bit multiply-xorshift hash over 8-byte words (the tail zero-padded,
// the length mixed in): fast enough to read a large model in about a
// second, and any changed byte changes it with overwhelming likelihood.
class Hasher {
 public:
  void Add(const char* data, size_t size) {
    size_t i = 0;
    for (; i + 8 <= size; i += 8) {
      uint64_t word;
      std::memcpy(&word, data + i, 8);
      Mix(word);
    }
    if (i < size) {
      uint64_t word = 0;
      std::memcpy(&word, data + i, size - i);
      Mix(word);
    }
    Mix(size);
  }
  uint64_t value() const { return Finish(state_); }

 private:
  void Mix(uint64_t word) {
    state_ =
        (state_ ^ Finish(word + 0x9e3779b97f4a7c15ULL)) * 0xbf58476d1ce4e5b9ULL;
  }
  static uint64_t Finish(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }
  uint64_t state_ = 0x243f6a8885a308d3ULL;
};

}  // namespace

absl::StatusOr<std::vector<std::string>> FilesLoadedFrom(
    const std::string& folder) {
  std::error_code error;
  if (!fs::is_directory(folder, error)) {
    return absl::NotFoundError(absl::StrCat(folder, " is not a folder"));
  }
  ASSIGN_OR_RETURN(const ModelFolder read, ReadModelFolder(folder));
  return read.files;
}

absl::StatusOr<std::string> FolderRevision(const std::string& folder) {
  ASSIGN_OR_RETURN(const std::vector<std::string> files,
                   FilesLoadedFrom(folder));
  Hasher hasher;
  std::vector<char> buffer(1 << 20);
  for (const std::string& name : files) {
    // A file that is not there, or is no regular file, is the load's to
    // report; its name alone goes into the revision.
    hasher.Add(name.data(), name.size());
    const fs::path path = fs::path(folder) / name;
    std::error_code error;
    if (!fs::is_regular_file(path, error)) continue;
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot read ", folder, "/", name));
    }
    while (in) {
      in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      hasher.Add(buffer.data(), static_cast<size_t>(in.gcount()));
    }
    if (in.bad()) {
      return absl::InvalidArgumentError(
          absl::StrCat("error reading ", folder, "/", name));
    }
  }
  return absl::StrFormat("%016x", hasher.value());
}

std::string FolderSignature(const std::string& folder) {
  std::string signature;
  for (const fs::path& file : FilesOf(folder)) {
    std::error_code error;
    const fs::path path = fs::path(folder) / file;
    const auto size = fs::file_size(path, error);
    const auto time = fs::last_write_time(path, error);
    absl::StrAppend(&signature, file.generic_string(), " ", error ? 0 : size,
                    " ", error ? 0 : time.time_since_epoch().count(), "\n");
  }
  return signature;
}

}  // namespace favor::model
