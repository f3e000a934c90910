#include "server/service/tensor_codec.h"

#include <cstring>

namespace favor::service {
namespace {

uint32_t BitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

template <typename T>
void PutLittleEndian(T value, char* out) {
  for (size_t i = 0; i < sizeof(T); ++i) {
    out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
  }
}

}  // namespace

uint16_t FloatToBFloat16(float value) {
  const uint32_t bits = BitsOf(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

uint16_t FloatToHalf(float value) {
  const uint32_t bits = BitsOf(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // rounds to infinity
  if (magnitude < 0x38800000u) {  // below the smallest normal half: subnormal
    // Adding 0.5 makes the FPU do the shift and round-to-even for us.
    float shifted;
    std::memcpy(&shifted, &magnitude, sizeof(shifted));
    shifted += 0.5f;
    return sign | static_cast<uint16_t>(BitsOf(shifted) - BitsOf(0.5f));
  }
  const uint32_t odd = (magnitude >> 13) & 1u;
  const uint32_t rebiased = magnitude - ((127u - 15u) << 23) + 0xfffu + odd;
  return sign | static_cast<uint16_t>(rebiased >> 13);
}

int64_t BytesPerElement(v1::Dtype dtype) {
  switch (dtype) {
    case v1::DTYPE_FLOAT32:
      return 4;
    case v1::DTYPE_FLOAT16:
    case v1::DTYPE_BFLOAT16:
      return 2;
    default:
      return 0;
  }
}

void EncodeFloats(absl::Span<const float> values, v1::Dtype dtype,
                  std::string* out) {
  const int64_t width = BytesPerElement(dtype);
  out->resize(values.size() * width);
  char* data = out->data();
  for (size_t i = 0; i < values.size(); ++i, data += width) {
    if (dtype == v1::DTYPE_FLOAT32) {
      PutLittleEndian(BitsOf(values[i]), data);
    } else if (dtype == v1::DTYPE_FLOAT16) {
      PutLittleEndian(FloatToHalf(values[i]), data);
    } else {
      PutLittleEndian(FloatToBFloat16(values[i]), data);
    }
  }
}

}  // namespace favor::service
