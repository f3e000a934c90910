#include "favor/tensor.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "favor/half_float.h"

namespace favor {
namespace {

uint16_t ReadU16(const char* p) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint16_t>(bytes[0] | (bytes[1] << 8));
}

void AppendU16(uint16_t value, std::string* out) {
  out->push_back(static_cast<char>(value & 0xffu));
  out->push_back(static_cast<char>(value >> 8));
}

void AppendU32(uint32_t value, std::string* out) {
  for (int i = 0; i < 4; ++i) {
    out->push_back(static_cast<char>((value >> (8 * i)) & 0xffu));
  }
}

uint32_t ReadU32(const char* p) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint32_t>(bytes[0]) |
         (static_cast<uint32_t>(bytes[1]) << 8) |
         (static_cast<uint32_t>(bytes[2]) << 16) |
         (static_cast<uint32_t>(bytes[3]) << 24);
}

}  // namespace

size_t DtypeSize(Dtype dtype) { return dtype == Dtype::kFloat32 ? 4 : 2; }

const char* DtypeName(Dtype dtype) {
  switch (dtype) {
    case Dtype::kFloat32:
      return "float32";
    case Dtype::kFloat16:
      return "float16";
    case Dtype::kBFloat16:
      return "bfloat16";
  }
  return "unknown";
}

Tensor Tensor::FromFloats(std::vector<int64_t> shape,
                          absl::Span<const float> values) {
  return FromFloats(std::move(shape), values, Dtype::kFloat32);
}

Tensor Tensor::FromFloats(std::vector<int64_t> shape,
                          absl::Span<const float> values, Dtype dtype) {
  Tensor tensor;
  tensor.shape = std::move(shape);
  tensor.dtype = dtype;
  tensor.data.reserve(values.size() * DtypeSize(dtype));
  for (float value : values) {
    switch (dtype) {
      case Dtype::kFloat32:
        AppendU32(FloatBits(value), &tensor.data);
        break;
      case Dtype::kFloat16:
        AppendU16(FloatToHalf(value), &tensor.data);
        break;
      case Dtype::kBFloat16:
        AppendU16(FloatToBFloat16(value), &tensor.data);
        break;
    }
  }
  return tensor;
}

int64_t Tensor::num_elements() const {
  int64_t count = 1;
  for (int64_t dimension : shape) count *= dimension;
  return count;
}

absl::Status Tensor::Validate() const {
  if (dtype != Dtype::kFloat32 && dtype != Dtype::kFloat16 &&
      dtype != Dtype::kBFloat16) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor dtype ", static_cast<int>(dtype), " is unknown"));
  }
  for (int64_t dimension : shape) {
    if (dimension < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor shape [", absl::StrJoin(shape, ", "),
                       "] has a dimension below 1"));
    }
  }
  const int64_t expected =
      num_elements() * static_cast<int64_t>(DtypeSize(dtype));
  if (static_cast<int64_t>(data.size()) != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor of shape [", absl::StrJoin(shape, ", "), "] and dtype ",
        DtypeName(dtype), " needs ", expected, " bytes, has ", data.size()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> Tensor::ToFloats() const {
  if (absl::Status status = Validate(); !status.ok()) return status;
  const size_t count = static_cast<size_t>(num_elements());
  std::vector<float> values(count);
  const char* bytes = data.data();
  for (size_t i = 0; i < count; ++i) {
    switch (dtype) {
      case Dtype::kFloat32:
        values[i] = FloatFromBits(ReadU32(bytes + 4 * i));
        break;
      case Dtype::kFloat16:
        values[i] = HalfToFloat(ReadU16(bytes + 2 * i));
        break;
      case Dtype::kBFloat16:
        values[i] = BFloat16ToFloat(ReadU16(bytes + 2 * i));
        break;
    }
  }
  return values;
}

}  // namespace favor
