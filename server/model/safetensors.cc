// The memory-mapped reader of safetensors.h, and the DType helpers.
#include "server/model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <set>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/common/json_parse.h"
#include "server/common/status_macros.h"
#include "server/model/safetensors_header.h"

// The file's bytes are little-endian and views hand them out as they are.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors views assume a little-endian host");

namespace favor::model {
namespace {

using internal::ErrnoError;
using internal::FileError;
using internal::kLengthFieldBytes;

// Closes a file descriptor on every path out of a function.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

struct MappedRegion {
  const void* address = nullptr;
  size_t size = 0;
};

// Maps a regular file of at least kLengthFieldBytes bytes read-only.
absl::StatusOr<MappedRegion> MapFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (a
  // model.safetensors that is a named pipe would hang the server); the type
  // is checked next.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoError(errno, path, "open");
  FdCloser closer(fd);
  struct stat info {};
  if (fstat(fd, &info) != 0) return ErrnoError(errno, path, "stat");
  if (!S_ISREG(info.st_mode)) return FileError(path, "not a regular file");
  const auto size = static_cast<uint64_t>(info.st_size);
  if (size < kLengthFieldBytes) {
    return FileError(path, absl::StrCat("file is ", size,
                                        " bytes, shorter than the 8-byte "
                                        "header length field"));
  }
  void* address = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (address == MAP_FAILED) return ErrnoError(errno, path, "mmap");
  return MappedRegion{address, static_cast<size_t>(size)};
}

}  // namespace

absl::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
    case DType::kF64:
      return "F64";
    case DType::kI64:
      return "I64";
    case DType::kI32:
      return "I32";
    case DType::kI16:
      return "I16";
    case DType::kI8:
      return "I8";
    case DType::kU8:
      return "U8";
    case DType::kBool:
      return "BOOL";
  }
  return "unknown";
}

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF64:
    case DType::kI64:
      return 8;
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
    case DType::kI16:
      return 2;
    case DType::kI8:
    case DType::kU8:
    case DType::kBool:
      return 1;
  }
  return 1;
}

bool IsWeightDType(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

int64_t TensorView::num_elements() const {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

std::string ShapeToString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

SafetensorsFile::SafetensorsFile(std::string path, const void* mapping,
                                 size_t mapping_size)
    : path_(std::move(path)), mapping_(mapping), mapping_size_(mapping_size) {}

SafetensorsFile::~SafetensorsFile() {
  if (mapping_ != nullptr) munmap(const_cast<void*>(mapping_), mapping_size_);
}

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(
    const std::string& path) {
  ASSIGN_OR_RETURN(MappedRegion region, MapFile(path));
  // From here on the destructor owns the mapping, whatever fails.
  auto file =
      absl::WrapUnique(new SafetensorsFile(path, region.address, region.size));
  const auto* bytes = static_cast<const uint8_t*>(region.address);
  ASSIGN_OR_RETURN(internal::Header header,
                   internal::ParseHeader(path, bytes, region.size));
  const uint8_t* data = bytes + header.data_offset;
  for (internal::HeaderEntry& entry : header.entries) {
    TensorView view{entry.dtype, std::move(entry.shape), data + entry.begin,
                    static_cast<size_t>(entry.end - entry.begin)};
    file->tensors_.emplace(std::move(entry.name), std::move(view));
  }
  file->metadata_ = std::move(header.metadata);
  return file;
}

std::vector<std::string> SafetensorsFile::TensorNames() const {
  std::vector<std::string> names;
  names.reserve(tensors_.size());
  for (const auto& [name, view] : tensors_) names.push_back(name);
  return names;
}

absl::Status SafetensorsFile::Remap(absl::Span<const TensorAlias> aliases) {
  std::map<std::string, TensorView, std::less<>> added;
  std::set<std::string, std::less<>> sources;
  for (const TensorAlias& alias : aliases) {
    ASSIGN_OR_RETURN(TensorView view, Get(alias.source));
    const int64_t rows = view.shape.empty() ? 1 : view.shape[0];
    if (alias.parts < 1 || alias.part < 0 || alias.part >= alias.parts ||
        view.shape.empty() || rows % alias.parts != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          path_, ": tensor ", Quote(alias.source), " of shape ",
          ShapeToString(view.shape), " does not split into ", alias.parts,
          " equal blocks of rows"));
    }
    const size_t block_bytes = view.byte_size / alias.parts;
    view.shape[0] = rows / alias.parts;
    view.data += block_bytes * alias.part;
    view.byte_size = block_bytes;
    if (!added.emplace(alias.name, view).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(path_, ": two tensors map onto ", Quote(alias.name)));
    }
    sources.insert(alias.source);
  }
  for (const std::string& source : sources) tensors_.erase(source);
  for (auto& [name, view] : added) {
    if (!tensors_.emplace(name, view).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          path_, ": tensor ", Quote(name),
          " is both in the file and made from another of its tensors"));
    }
  }
  return absl::OkStatus();
}

bool SafetensorsFile::Contains(absl::string_view name) const {
  return tensors_.find(name) != tensors_.end();
}

absl::StatusOr<TensorView> SafetensorsFile::Get(absl::string_view name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    return absl::NotFoundError(
        absl::StrCat(path_, ": no tensor named ", Quote(name)));
  }
  return it->second;
}

}  // namespace favor::model
