// WriteSafetensors: the writer half of safetensors.h.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "server/common/status_macros.h"
#include "server/model/safetensors.h"
#include "server/model/safetensors_header.h"

namespace favor::model {
namespace {

using Json = nlohmann::json;
using internal::ByteSize;
using internal::ErrnoError;
using internal::FileError;
using internal::kLengthFieldBytes;
using internal::kMetadataKey;
using internal::TensorError;

absl::Status ValidateTensorsToWrite(const std::string& path,
                                    absl::Span<const TensorToWrite> tensors) {
  std::map<absl::string_view, int> seen;
  for (const TensorToWrite& tensor : tensors) {
    if (tensor.name.empty() || tensor.name == kMetadataKey) {
      return TensorError(path, tensor.name, "reserved or empty tensor name");
    }
    if (!seen.emplace(tensor.name, 0).second) {
      return TensorError(path, tensor.name, "duplicate tensor name");
    }
    for (int64_t dim : tensor.shape) {
      if (dim < 0) {
        return TensorError(path, tensor.name,
                           absl::StrCat("negative dimension in shape ",
                                        ShapeToString(tensor.shape)));
      }
    }
    ASSIGN_OR_RETURN(uint64_t expected,
                     ByteSize(path, tensor.name, tensor.dtype, tensor.shape));
    if (tensor.bytes.size() != expected) {
      return TensorError(
          path, tensor.name,
          absl::StrCat(tensor.bytes.size(), " bytes given but ",
                       ShapeToString(tensor.shape), " of ",
                       DTypeName(tensor.dtype), " needs ", expected));
    }
  }
  return absl::OkStatus();
}

// Length field plus JSON, padded with spaces to a multiple of 8 bytes so
// that the data buffer, and with it every tensor, starts aligned.
absl::StatusOr<std::string> BuildHeader(
    const std::string& path, absl::Span<const TensorToWrite* const> ordered,
    const std::map<std::string, std::string>& metadata) {
  Json json = Json::object();
  if (!metadata.empty()) json[std::string(kMetadataKey)] = metadata;
  uint64_t offset = 0;
  for (const TensorToWrite* tensor : ordered) {
    const uint64_t end = offset + tensor->bytes.size();
    json[tensor->name] = {{"dtype", std::string(DTypeName(tensor->dtype))},
                          {"shape", tensor->shape},
                          {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text;
  try {
    text = json.dump();
  } catch (const std::exception& error) {  // names that are not UTF-8
    return FileError(path,
                     absl::StrCat("cannot encode header: ", error.what()));
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string header(kLengthFieldBytes, '\0');
  for (size_t i = 0; i < kLengthFieldBytes; ++i) {
    header[i] = static_cast<char>((uint64_t{text.size()} >> (8 * i)) & 0xff);
  }
  return header + text;
}

absl::Status WriteAll(int fd, const uint8_t* data, size_t size,
                      const std::string& path) {
  while (size > 0) {
    const ssize_t written = write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, path, "write");
    }
    data += written;
    size -= static_cast<size_t>(written);
  }
  return absl::OkStatus();
}

// Writes the pieces to a temporary file beside `path`, syncs it and renames
// it over `path`; the temporary is removed on any failure.
absl::Status WriteAtomically(
    const std::string& path,
    absl::Span<const absl::Span<const uint8_t>> pieces) {
  std::string temp_path = path + ".tmp.XXXXXX";
  const int fd = mkstemp(temp_path.data());
  if (fd < 0) return ErrnoError(errno, temp_path, "create");
  absl::Status status;
  for (absl::Span<const uint8_t> piece : pieces) {
    status = WriteAll(fd, piece.data(), piece.size(), temp_path);
    if (!status.ok()) break;
  }
  if (status.ok() && fchmod(fd, 0644) != 0) {
    status = ErrnoError(errno, temp_path, "chmod");
  }
  if (status.ok() && fsync(fd) != 0) {
    status = ErrnoError(errno, temp_path, "fsync");
  }
  if (close(fd) != 0 && status.ok()) {
    status = ErrnoError(errno, temp_path, "close");
  }
  if (status.ok() && rename(temp_path.c_str(), path.c_str()) != 0) {
    status = ErrnoError(errno, path, "rename the temporary file to");
  }
  if (!status.ok()) unlink(temp_path.c_str());
  return status;
}

}  // namespace

absl::Status WriteSafetensors(
    const std::string& path, absl::Span<const TensorToWrite> tensors,
    const std::map<std::string, std::string>& metadata) {
  RETURN_IF_ERROR(ValidateTensorsToWrite(path, tensors));
  std::vector<const TensorToWrite*> ordered;
  for (const TensorToWrite& tensor : tensors) ordered.push_back(&tensor);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const TensorToWrite* a, const TensorToWrite* b) {
                     return DTypeSize(a->dtype) > DTypeSize(b->dtype);
                   });
  ASSIGN_OR_RETURN(std::string header, BuildHeader(path, ordered, metadata));
  std::vector<absl::Span<const uint8_t>> pieces;
  pieces.emplace_back(reinterpret_cast<const uint8_t*>(header.data()),
                      header.size());
  for (const TensorToWrite* tensor : ordered) pieces.push_back(tensor->bytes);
  return WriteAtomically(path, pieces);
}

}  // namespace favor::model
