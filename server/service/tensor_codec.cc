#include "server/service/tensor_codec.h"

namespace favor::service {
namespace {

template <typename T>
void PutLittleEndian(T value, char* out) {
  for (size_t i = 0; i < sizeof(T); ++i) {
    out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
  }
}

}  // namespace

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
      PutLittleEndian(FloatBits(values[i]), data);
    } else if (dtype == v1::DTYPE_FLOAT16) {
      PutLittleEndian(FloatToHalf(values[i]), data);
    } else {
      PutLittleEndian(FloatToBFloat16(values[i]), data);
    }
  }
}

}  // namespace favor::service
