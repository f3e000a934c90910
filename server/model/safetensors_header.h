// Internals of the safetensors reader and writer (safetensors.h): the
// format's constants, the messages of its errors, and the parsing and
// checking of a file's header, which treats every byte as hostile.
// Implementation detail of server/model.
#ifndef FAVOR_SERVER_MODEL_SAFETENSORS_HEADER_H_
#define FAVOR_SERVER_MODEL_SAFETENSORS_HEADER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/model/safetensors.h"

namespace favor::model::internal {

inline constexpr size_t kLengthFieldBytes = 8;
inline constexpr absl::string_view kMetadataKey = "__metadata__";

// INVALID_ARGUMENT: "<path>: <message>".
absl::Status FileError(absl::string_view path, absl::string_view message);
// INVALID_ARGUMENT: "<path>: tensor '<name>': <message>".
absl::Status TensorError(absl::string_view path, absl::string_view name,
                         absl::string_view message);
// The errno's code: "<path>: cannot <action>".
absl::Status ErrnoError(int error, absl::string_view path,
                        absl::string_view action);

// product(shape) × element size, or an error when it overflows 64 bits.
absl::StatusOr<uint64_t> ByteSize(const std::string& path,
                                  const std::string& name, DType dtype,
                                  const std::vector<int64_t>& shape);

// A validated header entry, before it becomes a view into the mapping.
struct HeaderEntry {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // offsets into the data buffer, end exclusive
  uint64_t end = 0;
};

struct Header {
  std::vector<HeaderEntry> entries;  // sorted by offset
  std::map<std::string, std::string> metadata;
  uint64_t data_offset = 0;  // where the data buffer starts in the file
};

// Parses and checks the header of the `size` bytes of a safetensors file
// (at least kLengthFieldBytes): the length field against the file size and
// SafetensorsFile::kMaxHeaderBytes, the JSON strictly
// (server/common/json_parse.h), every entry's dtype, shape and offsets, and
// that the tensors tile the data buffer exactly. Nothing past the header is
// read.
absl::StatusOr<Header> ParseHeader(const std::string& path,
                                   const uint8_t* bytes, size_t size);

}  // namespace favor::model::internal

#endif  // FAVOR_SERVER_MODEL_SAFETENSORS_HEADER_H_
