// float32 vectors to the bytes of a v1::Tensor (little-endian, row-major) in
// FLOAT32, FLOAT16 or BFLOAT16, for token embeddings. Rounding is to nearest,
// ties to even, as LibTorch's conversions do.
#ifndef FAVOR_SERVER_SERVICE_TENSOR_CODEC_H_
#define FAVOR_SERVER_SERVICE_TENSOR_CODEC_H_

#include <cstdint>
#include <string>

#include "absl/types/span.h"
#include "favor/v1/favor.pb.h"

namespace favor::service {

uint16_t FloatToHalf(float value);
uint16_t FloatToBFloat16(float value);

// Bytes per element of a supported dtype; 0 for DTYPE_UNSPECIFIED and
// unknown values.
int64_t BytesPerElement(v1::Dtype dtype);

// Writes `values` as `dtype` (a supported one) into `out`.
void EncodeFloats(absl::Span<const float> values, v1::Dtype dtype,
                  std::string* out);

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_TENSOR_CODEC_H_
