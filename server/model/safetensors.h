// Safetensors files: a hardened, memory-mapped reader, a writer, and a check
// of a file's tensors against what a model expects. No LibTorch here: the
// reader hands out byte views, and the model turns them into tensors.
//
// The format (https://github.com/huggingface/safetensors): an 8-byte little-
// endian header length N, N bytes of JSON header, then the data buffer. The
// header maps each tensor name to {"dtype", "shape", "data_offsets": [begin,
// end]} (offsets into the data buffer) and may hold "__metadata__", a string
// to string map.
//
// The reader treats every file as hostile: whatever the bytes, Open returns a
// Status and never reads outside the mapping. It checks the header length
// against the file size and a cap, parses the JSON strictly
// (server/common/json_parse.h), checks every entry's dtype, shape and offsets,
// and requires the tensors to tile the data buffer exactly (no overlap, no gap,
// no trailing bytes), as the reference implementation does. Accepted dtypes are
// F32, F16 and BF16; any other is rejected by name. Errors are INVALID_ARGUMENT
// (NOT_FOUND or the errno's code when the file cannot be opened) and name the
// file and, where one is involved, the tensor. docs/models.md lists every
// check.
//
// One hazard mmap cannot rule out: a file truncated by another process while
// it is mapped raises SIGBUS on access. Model files are replaced by rename
// (as WriteSafetensors does), never rewritten in place.
//
// The reader is safetensors.cc, its header checks safetensors_header.cc; the
// writer is safetensors_writer.cc and CheckTensors tensor_check.cc.
#ifndef FAVOR_SERVER_MODEL_SAFETENSORS_H_
#define FAVOR_SERVER_MODEL_SAFETENSORS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace favor::model {

// Element types the reader accepts. All are little-endian in the file.
// Weights are F32, F16 or BF16 (IsWeightDType); the others are read so
// that a checkpoint's buffers (an I64 "embeddings.position_ids", a BOOL
// mask) do not make the file unreadable, and are never loaded as weights.
enum class DType { kF32, kF16, kBF16, kF64, kI64, kI32, kI16, kI8, kU8, kBool };

// "F32", "F16", "BF16", "F64", "I64", ... as the header spells them.
absl::string_view DTypeName(DType dtype);
// Bytes per element.
size_t DTypeSize(DType dtype);
// F32, F16 and BF16: what a model's weights may be stored in.
bool IsWeightDType(DType dtype);

// A tensor's bytes inside a mapped file; valid while the SafetensorsFile
// that returned it lives. `data` is aligned to the element size in files that
// WriteSafetensors or Hugging Face's writer produced, but a file from
// elsewhere may place it anywhere: copy (memcpy) rather than cast when in
// doubt.
struct TensorView {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  size_t byte_size = 0;  // product of shape × DTypeSize(dtype)

  int64_t num_elements() const;
};

// A tensor of the file under another name: the whole of `source`, or the
// `part`-th of `parts` equal blocks of its rows (dimension 0), as when one
// fused checkpoint tensor (NomicBERT's Wqkv) holds several of Favor's.
struct TensorAlias {
  std::string name;
  std::string source;
  int64_t part = 0;
  int64_t parts = 1;
};

class SafetensorsFile {
 public:
  // Largest header accepted, as the reference implementation caps it.
  static constexpr uint64_t kMaxHeaderBytes = 100'000'000;

  // Maps `path` read-only and validates it completely; nothing is read from
  // the data buffer, so opening a multi-gigabyte file costs one mmap.
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(
      const std::string& path);

  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  // Tensor names in lexicographic order.
  std::vector<std::string> TensorNames() const;
  size_t num_tensors() const { return tensors_.size(); }
  bool Contains(absl::string_view name) const;
  // NOT_FOUND (naming the file and tensor) when there is no such tensor.
  absl::StatusOr<TensorView> Get(absl::string_view name) const;
  // Adds every alias as a view of its source (no copy), then removes the
  // sources, so that the file reads as the aliases name it. NOT_FOUND
  // naming the file and the source when there is none; INVALID_ARGUMENT
  // when a source's rows do not split into its `parts` or a name is taken.
  absl::Status Remap(absl::Span<const TensorAlias> aliases);
  // The header's "__metadata__" map, empty when absent.
  const std::map<std::string, std::string>& metadata() const {
    return metadata_;
  }

  // ---- Implementation details follow. ----
 private:
  SafetensorsFile(std::string path, const void* mapping, size_t mapping_size);

  std::string path_;
  const void* mapping_ = nullptr;  // munmap'ed by the destructor
  size_t mapping_size_ = 0;
  // Views into the mapping, checked by Open.
  std::map<std::string, TensorView, std::less<>> tensors_;
  std::map<std::string, std::string> metadata_;
};

// One tensor for WriteSafetensors. `bytes` holds the elements, little-endian,
// row-major, exactly product(shape) × DTypeSize(dtype) bytes.
struct TensorToWrite {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  absl::Span<const uint8_t> bytes;
};

// Writes a safetensors file that Open (and Hugging Face's loader) accepts.
// The header is padded to a multiple of 8 bytes and tensors are laid out by
// decreasing element size, so every tensor is aligned to its element size.
// Atomic: the file is written to a temporary next to `path`, synced, then
// renamed over it, so a reader sees the old file or the new, never a part.
// INVALID_ARGUMENT for an empty, duplicate or "__metadata__" name, a negative
// dimension or a byte count that does not match the shape.
absl::Status WriteSafetensors(
    const std::string& path, absl::Span<const TensorToWrite> tensors,
    const std::map<std::string, std::string>& metadata = {});

// What a model expects of one tensor.
struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
  // Optional tensors may be absent; when present their shape must match.
  bool required = true;
};

// Compares a file's tensors with `expected` and reports every problem in one
// INVALID_ARGUMENT message naming the file: required tensors that are
// missing, tensors the model does not know (unexpected), and shape
// mismatches with the expected and actual shapes. Each list is cut after 20
// names ("... and N more"). A tensor `ignore` accepts (null: none) is never
// unexpected: a task head beside the encoder, a buffer.
absl::Status CheckTensors(
    const SafetensorsFile& file, absl::Span<const ExpectedTensor> expected,
    const std::function<bool(absl::string_view name)>& ignore = nullptr);

// "[2, 3]": shapes in messages.
std::string ShapeToString(absl::Span<const int64_t> shape);

}  // namespace favor::model

#endif  // FAVOR_SERVER_MODEL_SAFETENSORS_H_
