// Tensors for `favor-cli attend`: shapes from the command line, values drawn
// from a seed or read from raw files, and the output written back as a raw
// file. Raw files hold float32 values, little-endian, row-major, no header
// (numpy: `array.astype('<f4').tofile(path)`), so their length must match
// the shape.
#ifndef FAVOR_CLIENT_CLI_ATTEND_INPUT_H_
#define FAVOR_CLIENT_CLI_ATTEND_INPUT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "favor/tensor.h"

namespace favor::cli {

// The shapes of one Attend call.
struct AttendShapes {
  std::vector<int64_t> query;  // (batch, heads, query_length, head_dim)
  std::vector<int64_t> key;    // (batch, heads, key_length, head_dim)
  std::vector<int64_t> value;  // (batch, heads, key_length, value_dim)
};

// The most elements of one tensor favor-cli makes or reads: the server's
// default limit (AttendLimits::max_tensor_elements), 1 GiB of float32.
inline constexpr int64_t kMaxAttendTensorElements = int64_t{1} << 28;

// "B,H,L,D" → the query shape; key_length and value_dim of 0 mean L and D.
// INVALID_ARGUMENT unless there are four dimensions, each at least 1, and
// each tensor has at most kMaxAttendTensorElements elements.
absl::StatusOr<AttendShapes> ParseAttendShapes(absl::string_view shape,
                                               int64_t key_length,
                                               int64_t value_dim);

// A float32 tensor of `shape` with standard normal values from `seed`.
Tensor RandomTensor(const std::vector<int64_t>& shape, uint64_t seed);

// A float32 tensor of `shape` from a raw file; NOT_FOUND when it cannot be
// read, INVALID_ARGUMENT naming both sizes when its length does not match.
absl::StatusOr<Tensor> ReadTensorFile(const std::string& path,
                                      const std::vector<int64_t>& shape);

// Writes the tensor's values as raw float32 (float16 and bfloat16 widened);
// FAILED_PRECONDITION naming the path when it cannot be written.
absl::Status WriteTensorFile(const std::string& path, const Tensor& tensor);

}  // namespace favor::cli

#endif  // FAVOR_CLIENT_CLI_ATTEND_INPUT_H_
