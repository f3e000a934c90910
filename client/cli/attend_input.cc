#include "client/cli/attend_input.h"

#include <cstring>
#include <fstream>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/cli/read_file.h"

namespace favor::cli {
namespace {

int64_t Product(const std::vector<int64_t>& shape) {
  int64_t product = 1;
  for (int64_t dimension : shape) product *= dimension;
  return product;
}

// The product, or -1 past kMaxAttendTensorElements (never overflowing).
int64_t BoundedProduct(const std::vector<int64_t>& shape) {
  int64_t product = 1;
  for (int64_t dimension : shape) {
    if (dimension > kMaxAttendTensorElements / product) return -1;
    product *= dimension;
  }
  return product;
}

}  // namespace

absl::StatusOr<AttendShapes> ParseAttendShapes(absl::string_view shape,
                                               int64_t key_length,
                                               int64_t value_dim) {
  std::vector<int64_t> query;
  for (absl::string_view word : absl::StrSplit(shape, ',')) {
    int64_t dimension = 0;
    if (!absl::SimpleAtoi(word, &dimension) || dimension < 1) {
      query.clear();
      break;
    }
    query.push_back(dimension);
  }
  if (query.size() != 4 || key_length < 0 || value_dim < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--shape '", shape,
        "' is not BATCH,HEADS,QUERY_LENGTH,HEAD_DIM (each at least 1), or "
        "--key_length / --value_dim is negative"));
  }
  AttendShapes shapes;
  shapes.query = query;
  const int64_t keys = key_length > 0 ? key_length : query[2];
  const int64_t values = value_dim > 0 ? value_dim : query[3];
  shapes.key = {query[0], query[1], keys, query[3]};
  shapes.value = {query[0], query[1], keys, values};
  for (const std::vector<int64_t>* tensor :
       {&shapes.query, &shapes.key, &shapes.value}) {
    if (BoundedProduct(*tensor) < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--shape '", shape, "' (with --key_length, --value_dim) makes a "
          "tensor [", absl::StrJoin(*tensor, ", "), "] of more than ",
          kMaxAttendTensorElements,
          " elements, the server's default --max_attend_tensor_elements"));
    }
  }
  return shapes;
}

Tensor RandomTensor(const std::vector<int64_t>& shape, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(static_cast<size_t>(Product(shape)));
  for (float& value : values) value = normal(engine);
  return Tensor::FromFloats(shape, values);
}

absl::StatusOr<Tensor> ReadTensorFile(const std::string& path,
                                      const std::vector<int64_t>& shape) {
  absl::StatusOr<std::string> data = ReadFile(path);
  if (!data.ok()) return data.status();
  Tensor tensor;
  tensor.shape = shape;
  tensor.dtype = Dtype::kFloat32;
  tensor.data = *std::move(data);
  const int64_t want = Product(shape) * 4;
  if (static_cast<int64_t>(tensor.data.size()) != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", path, "' holds ", tensor.data.size(), " bytes; shape [",
        absl::StrJoin(shape, ","), "] of float32 needs ", want));
  }
  return tensor;
}

absl::Status WriteTensorFile(const std::string& path, const Tensor& tensor) {
  absl::StatusOr<std::vector<float>> values = tensor.ToFloats();
  if (!values.ok()) return values.status();
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  // The values are written as this machine holds them; every platform the
  // project builds on is little-endian, as the file format wants.
  file.write(reinterpret_cast<const char*>(values->data()),
             static_cast<std::streamsize>(values->size() * sizeof(float)));
  if (!file) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace favor::cli
