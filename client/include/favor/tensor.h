// favor::Tensor: the client library's own dense tensor, the Attend call's
// input and output (and the per-token outputs of Embed). It is plain bytes
// with a shape and an element type, exactly as favor.v1.Tensor carries them
// on the wire, so that a user of the client needs neither LibTorch nor
// protobuf.
#ifndef FAVOR_CLIENT_INCLUDE_FAVOR_TENSOR_H_
#define FAVOR_CLIENT_INCLUDE_FAVOR_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace favor {

// Element type of a Tensor's bytes (favor.v1.Dtype).
enum class Dtype {
  // IEEE 754 binary32, 4 bytes per element.
  kFloat32 = 1,
  // IEEE 754 binary16, 2 bytes per element.
  kFloat16 = 2,
  // bfloat16 (the upper half of a binary32), 2 bytes per element.
  kBFloat16 = 3,
};

// Bytes per element of `dtype` (4 or 2).
size_t DtypeSize(Dtype dtype);

// "float32", "float16" or "bfloat16".
const char* DtypeName(Dtype dtype);

// A dense tensor: product(shape) elements of `dtype`, row-major (the last
// dimension varies fastest), each little-endian, with no padding. A plain
// value type: copyable, movable, no hidden sharing.
struct Tensor {
  // Dimensions, outermost first; each at least 1 in a valid tensor.
  std::vector<int64_t> shape;
  // Element type.
  Dtype dtype = Dtype::kFloat32;
  // Exactly num_elements() * DtypeSize(dtype) bytes in a valid tensor.
  std::string data;

  // A float32 tensor of `shape` holding `values` (which must hold
  // product(shape) values; Validate() says whether they did).
  static Tensor FromFloats(std::vector<int64_t> shape,
                           absl::Span<const float> values);

  // `values` rounded to `dtype` (round to nearest even for float16 and
  // bfloat16; float16 overflows become infinity).
  static Tensor FromFloats(std::vector<int64_t> shape,
                           absl::Span<const float> values, Dtype dtype);

  // product(shape); 1 for an empty shape (a scalar).
  int64_t num_elements() const;

  // The elements widened to float, whatever the dtype. INVALID_ARGUMENT when
  // the tensor is not valid (see Validate).
  absl::StatusOr<std::vector<float>> ToFloats() const;

  // OK when every dimension is at least 1 and data holds exactly
  // num_elements() * DtypeSize(dtype) bytes; INVALID_ARGUMENT naming the
  // problem otherwise. (The server also refuses NaN and infinity in request
  // tensors; this does not look at the values.)
  absl::Status Validate() const;
};

}  // namespace favor

#endif  // FAVOR_CLIENT_INCLUDE_FAVOR_TENSOR_H_
