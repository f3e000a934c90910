#include "server/model/safetensors_header.h"

#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/common/json_parse.h"
#include "server/common/status_macros.h"

namespace favor::model::internal {
namespace {

using Json = nlohmann::json;

uint64_t ReadLittleEndian64(const uint8_t* bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

// The JSON text after the length field, checked against the file size.
absl::StatusOr<absl::string_view> HeaderText(const std::string& path,
                                             const uint8_t* bytes,
                                             size_t size) {
  const uint64_t length = ReadLittleEndian64(bytes);
  const uint64_t available = size - kLengthFieldBytes;
  if (length > available) {
    return FileError(
        path, absl::StrCat("header length ", length, " exceeds the ", available,
                           " bytes after the length field "
                           "(truncated or not safetensors)"));
  }
  if (length > SafetensorsFile::kMaxHeaderBytes) {
    return FileError(
        path, absl::StrCat("header length ", length, " exceeds the limit of ",
                           SafetensorsFile::kMaxHeaderBytes, " bytes"));
  }
  return absl::string_view(
      reinterpret_cast<const char*>(bytes) + kLengthFieldBytes,
      static_cast<size_t>(length));
}

absl::StatusOr<DType> ParseDType(const std::string& path,
                                 const std::string& name, const Json& value) {
  if (!value.is_string()) {
    return TensorError(
        path, name,
        absl::StrCat("\"dtype\" must be a string, got ", DescribeJson(value)));
  }
  const auto& text = value.get_ref<const std::string&>();
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64,
                      DType::kI64, DType::kI32, DType::kI16, DType::kI8,
                      DType::kU8, DType::kBool}) {
    if (text == DTypeName(dtype)) return dtype;
  }
  return TensorError(
      path, name,
      absl::StrCat("unsupported dtype ", Quote(text),
                   " (Favor reads F32, F16, BF16, F64, I64, I32, I16, I8, U8 "
                   "and BOOL, and loads weights in the first three)"));
}

absl::StatusOr<std::vector<int64_t>> ParseShape(const std::string& path,
                                                const std::string& name,
                                                const Json& value) {
  if (!value.is_array()) {
    return TensorError(
        path, name,
        absl::StrCat("\"shape\" must be an array, got ", DescribeJson(value)));
  }
  std::vector<int64_t> shape;
  shape.reserve(value.size());
  for (const Json& dim : value) {
    const bool valid =
        dim.is_number_unsigned() &&
        dim.get<uint64_t>() <=
            static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    if (!valid) {
      return TensorError(
          path, name,
          absl::StrCat("shape[", shape.size(), "] is ", DescribeJson(dim),
                       "; dimensions must be integers in [0, "
                       "2^63)"));
    }
    shape.push_back(dim.get<int64_t>());
  }
  return shape;
}

absl::Status ParseOffsets(const std::string& path, const Json& value,
                          uint64_t data_size, uint64_t byte_size,
                          HeaderEntry& entry) {
  const bool valid = value.is_array() && value.size() == 2 &&
                     value[0].is_number_unsigned() &&
                     value[1].is_number_unsigned();
  if (!valid) {
    return TensorError(path, entry.name,
                       "\"data_offsets\" must be [begin, end], two "
                       "non-negative integers");
  }
  entry.begin = value[0].get<uint64_t>();
  entry.end = value[1].get<uint64_t>();
  if (entry.begin > entry.end) {
    return TensorError(path, entry.name,
                       absl::StrCat("data_offsets begin ", entry.begin,
                                    " is after end ", entry.end));
  }
  if (entry.end > data_size) {
    return TensorError(
        path, entry.name,
        absl::StrCat("data_offsets end ", entry.end, " is past the end of the ",
                     data_size, "-byte data buffer (file truncated?)"));
  }
  if (entry.end - entry.begin != byte_size) {
    return TensorError(
        path, entry.name,
        absl::StrCat("data_offsets span ", entry.end - entry.begin,
                     " bytes but shape ", ShapeToString(entry.shape), " of ",
                     DTypeName(entry.dtype), " needs ", byte_size));
  }
  return absl::OkStatus();
}

absl::StatusOr<HeaderEntry> ParseEntry(const std::string& path,
                                       const std::string& name,
                                       const Json& value, uint64_t data_size) {
  if (!value.is_object()) {
    return TensorError(
        path, name,
        absl::StrCat("entry must be an object, got ", DescribeJson(value)));
  }
  for (const auto& [key, unused] : value.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      return TensorError(path, name,
                         absl::StrCat("unknown field ", Quote(key)));
    }
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!value.contains(key)) {
      return TensorError(path, name,
                         absl::StrCat("missing field \"", key, "\""));
    }
  }
  HeaderEntry entry;
  entry.name = name;
  ASSIGN_OR_RETURN(entry.dtype, ParseDType(path, name, value["dtype"]));
  ASSIGN_OR_RETURN(entry.shape, ParseShape(path, name, value["shape"]));
  ASSIGN_OR_RETURN(uint64_t byte_size,
                   ByteSize(path, name, entry.dtype, entry.shape));
  RETURN_IF_ERROR(
      ParseOffsets(path, value["data_offsets"], data_size, byte_size, entry));
  return entry;
}

absl::StatusOr<std::map<std::string, std::string>> ParseMetadata(
    const std::string& path, const Json& value) {
  if (!value.is_object()) {
    return FileError(path, absl::StrCat("\"__metadata__\" must be an object, "
                                        "got ",
                                        DescribeJson(value)));
  }
  std::map<std::string, std::string> metadata;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string()) {
      return FileError(
          path, absl::StrCat("\"__metadata__\" value ", Quote(key),
                             " must be a string, got ", DescribeJson(item)));
    }
    metadata.emplace(key, item.get<std::string>());
  }
  return metadata;
}

absl::StatusOr<Header> ParseEntries(const std::string& path, const Json& json,
                                    uint64_t data_size) {
  Header header;
  header.entries.reserve(json.size());
  for (const auto& [name, value] : json.items()) {
    if (name == kMetadataKey) {
      ASSIGN_OR_RETURN(header.metadata, ParseMetadata(path, value));
      continue;
    }
    ASSIGN_OR_RETURN(HeaderEntry entry,
                     ParseEntry(path, name, value, data_size));
    header.entries.push_back(std::move(entry));
  }
  return header;
}

// The tensors must tile [0, data_size) exactly. Overlaps would let one
// tensor's bytes alias another's; gaps and trailing bytes are how polyglot
// files hide a second payload. Sorting by offset makes both one pass.
absl::Status CheckLayout(const std::string& path,
                         std::vector<HeaderEntry>& entries,
                         uint64_t data_size) {
  std::sort(entries.begin(), entries.end(),
            [](const HeaderEntry& a, const HeaderEntry& b) {
              return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
            });
  uint64_t cursor = 0;
  const HeaderEntry* previous = nullptr;
  for (const HeaderEntry& entry : entries) {
    if (entry.begin < cursor) {
      return TensorError(
          path, entry.name,
          absl::StrCat("bytes [", entry.begin, ", ", entry.end,
                       ") overlap tensor ", Quote(previous->name), " (bytes [",
                       previous->begin, ", ", previous->end, "))"));
    }
    if (entry.begin > cursor) {
      return TensorError(path, entry.name,
                         absl::StrCat("starts at byte ", entry.begin,
                                      ", leaving a gap after byte ", cursor,
                                      " of the data buffer"));
    }
    cursor = entry.end;
    previous = &entry;
  }
  if (cursor != data_size) {
    return FileError(path, absl::StrCat(data_size - cursor,
                                        " trailing bytes after the last "
                                        "tensor (data buffer is ",
                                        data_size, " bytes)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status FileError(absl::string_view path, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", message));
}

absl::Status TensorError(absl::string_view path, absl::string_view name,
                         absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": tensor ", Quote(name), ": ", message));
}

absl::Status ErrnoError(int error, absl::string_view path,
                        absl::string_view action) {
  return absl::ErrnoToStatus(error, absl::StrCat(path, ": cannot ", action));
}

absl::StatusOr<uint64_t> ByteSize(const std::string& path,
                                  const std::string& name, DType dtype,
                                  const std::vector<int64_t>& shape) {
  uint64_t bytes = DTypeSize(dtype);
  for (int64_t dim : shape) {
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes)) {
      return TensorError(path, name,
                         absl::StrCat("shape ", ShapeToString(shape),
                                      " overflows 64-bit byte counts"));
    }
  }
  return bytes;
}

absl::StatusOr<Header> ParseHeader(const std::string& path,
                                   const uint8_t* bytes, size_t size) {
  ASSIGN_OR_RETURN(absl::string_view text, HeaderText(path, bytes, size));
  ASSIGN_OR_RETURN(Json json,
                   ParseJsonObject(text, absl::StrCat(path, ": header")));
  const uint64_t data_offset = kLengthFieldBytes + text.size();
  const uint64_t data_size = size - data_offset;
  ASSIGN_OR_RETURN(Header header, ParseEntries(path, json, data_size));
  RETURN_IF_ERROR(CheckLayout(path, header.entries, data_size));
  header.data_offset = data_offset;
  return header;
}

}  // namespace favor::model::internal
