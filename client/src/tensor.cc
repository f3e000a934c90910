#include "favor/tensor.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace favor {
namespace {

uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float BitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// Round to nearest even on the 16 dropped bits; NaN stays a (quiet) NaN.
uint16_t FloatToBFloat16(float value) {
  uint32_t bits = FloatBits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (bits >> 16) | 0x0040u;
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

float BFloat16ToFloat(uint16_t half) {
  return BitsToFloat(static_cast<uint32_t>(half) << 16);
}

// IEEE binary16, round to nearest even; overflow gives infinity and values
// below the smallest subnormal round to (signed) zero.
uint16_t FloatToFloat16(float value) {
  const uint32_t bits = FloatBits(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // rounds past max
  if (magnitude < 0x38800000u) {                        // subnormal or zero
    if (magnitude < 0x33000000u) return sign;           // below half of 2^-24
    const uint32_t exponent = magnitude >> 23;
    const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // 14..24 for 2^-25 <= x < 2^-14
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return sign | static_cast<uint16_t>(half);
  }
  uint32_t half = ((magnitude >> 13) - (112u << 10));  // rebias 127 -> 15
  const uint32_t rest = magnitude & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return sign | static_cast<uint16_t>(half);
}

float Float16ToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1fu)
    return BitsToFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) {
    return BitsToFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  }
  if (mantissa == 0) return BitsToFloat(sign);
  // Subnormal: normalise it.
  int shift = 0;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    ++shift;
  }
  mantissa &= 0x3ffu;
  return BitsToFloat(sign | ((113u - shift) << 23) | (mantissa << 13));
}

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
        AppendU16(FloatToFloat16(value), &tensor.data);
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
        values[i] = BitsToFloat(ReadU32(bytes + 4 * i));
        break;
      case Dtype::kFloat16:
        values[i] = Float16ToFloat(ReadU16(bytes + 2 * i));
        break;
      case Dtype::kBFloat16:
        values[i] = BFloat16ToFloat(ReadU16(bytes + 2 * i));
        break;
    }
  }
  return values;
}

}  // namespace favor
