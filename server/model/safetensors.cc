#include "server/model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <limits>
#include <tuple>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/common/status_macros.h"
#include "server/model/json_parse.h"

// The file's bytes are little-endian and views hand them out as they are.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors views assume a little-endian host");

namespace favor::model {
namespace {

using Json = nlohmann::json;

constexpr size_t kLengthFieldBytes = 8;
constexpr absl::string_view kMetadataKey = "__metadata__";
// Longest list of names CheckTensors prints per kind of problem.
constexpr size_t kMaxListedNames = 20;

// ---- Reading ----

// A validated header entry, before it becomes a view into the mapping.
struct Entry {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // offsets into the data buffer, end exclusive
  uint64_t end = 0;
};

struct Header {
  std::vector<Entry> entries;
  std::map<std::string, std::string> metadata;
};

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
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
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
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    if (text == DTypeName(dtype)) return dtype;
  }
  return TensorError(path, name,
                     absl::StrCat("unsupported dtype ", Quote(text),
                                  " (Favor accepts F32, F16 and BF16)"));
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

// product(shape) × element size, or an error when it overflows 64 bits.
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

absl::Status ParseOffsets(const std::string& path, const Json& value,
                          uint64_t data_size, uint64_t byte_size,
                          Entry& entry) {
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

absl::StatusOr<Entry> ParseEntry(const std::string& path,
                                 const std::string& name, const Json& value,
                                 uint64_t data_size) {
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
  Entry entry;
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

absl::StatusOr<Header> ParseHeader(const std::string& path, const Json& json,
                                   uint64_t data_size) {
  Header header;
  header.entries.reserve(json.size());
  for (const auto& [name, value] : json.items()) {
    if (name == kMetadataKey) {
      ASSIGN_OR_RETURN(header.metadata, ParseMetadata(path, value));
      continue;
    }
    ASSIGN_OR_RETURN(Entry entry, ParseEntry(path, name, value, data_size));
    header.entries.push_back(std::move(entry));
  }
  return header;
}

// The tensors must tile [0, data_size) exactly. Overlaps would let one
// tensor's bytes alias another's; gaps and trailing bytes are how polyglot
// files hide a second payload. Sorting by offset makes both one pass.
absl::Status CheckLayout(const std::string& path, std::vector<Entry>& entries,
                         uint64_t data_size) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  uint64_t cursor = 0;
  const Entry* previous = nullptr;
  for (const Entry& entry : entries) {
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

// ---- Writing ----

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

// ---- Checking ----

// "N missing: 'a', 'b', ... and K more"
std::string ListProblems(absl::string_view kind,
                         const std::vector<std::string>& items) {
  const size_t shown = std::min(items.size(), kMaxListedNames);
  std::string text = absl::StrCat(
      items.size(), " ", kind, ": ",
      absl::StrJoin(items.begin(),
                    items.begin() + static_cast<std::ptrdiff_t>(shown), ", "));
  if (items.size() > shown) {
    absl::StrAppend(&text, " ... and ", items.size() - shown, " more");
  }
  return text;
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
  }
  return "unknown";
}

size_t DTypeSize(DType dtype) { return dtype == DType::kF32 ? 4 : 2; }

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
  ASSIGN_OR_RETURN(absl::string_view header_text,
                   HeaderText(path, bytes, region.size));
  ASSIGN_OR_RETURN(
      Json json, ParseJsonObject(header_text, absl::StrCat(path, ": header")));
  const uint8_t* data = bytes + kLengthFieldBytes + header_text.size();
  const uint64_t data_size =
      region.size - kLengthFieldBytes - header_text.size();
  ASSIGN_OR_RETURN(Header header, ParseHeader(path, json, data_size));
  RETURN_IF_ERROR(CheckLayout(path, header.entries, data_size));
  for (Entry& entry : header.entries) {
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

absl::Status CheckTensors(const SafetensorsFile& file,
                          absl::Span<const ExpectedTensor> expected) {
  std::map<absl::string_view, const ExpectedTensor*> by_name;
  std::vector<std::string> missing, unexpected, mismatched;
  for (const ExpectedTensor& tensor : expected) {
    by_name.emplace(tensor.name, &tensor);
    absl::StatusOr<TensorView> view = file.Get(tensor.name);
    if (!view.ok()) {
      if (tensor.required) missing.push_back(Quote(tensor.name));
    } else if (view->shape != tensor.shape) {
      mismatched.push_back(absl::StrCat(Quote(tensor.name), " (expected ",
                                        ShapeToString(tensor.shape), ", got ",
                                        ShapeToString(view->shape), ")"));
    }
  }
  for (const std::string& name : file.TensorNames()) {
    if (by_name.count(name) == 0) unexpected.push_back(Quote(name));
  }
  std::vector<std::string> problems;
  if (!missing.empty()) problems.push_back(ListProblems("missing", missing));
  if (!unexpected.empty()) {
    problems.push_back(ListProblems("unexpected", unexpected));
  }
  if (!mismatched.empty()) {
    problems.push_back(ListProblems("with the wrong shape", mismatched));
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(file.path(), ": tensors do not match the model config: ",
                   absl::StrJoin(problems, "; ")));
}

}  // namespace favor::model
