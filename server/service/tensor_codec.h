// float32 vectors to the bytes of a v1::Tensor (little-endian, row-major) in
// FLOAT32, FLOAT16 or BFLOAT16, for token embeddings. The element
// conversions are favor/half_float.h's (round to nearest, ties to even, as
// the client's), included here with the codec that uses them.
#ifndef FAVOR_SERVER_SERVICE_TENSOR_CODEC_H_
#define FAVOR_SERVER_SERVICE_TENSOR_CODEC_H_

#include <cstdint>
#include <string>

#include "absl/types/span.h"
#include "favor/half_float.h"
#include "favor/v1/favor.pb.h"

namespace favor::service {

// Bytes per element of a supported dtype; 0 for DTYPE_UNSPECIFIED and
// unknown values.
int64_t BytesPerElement(v1::Dtype dtype);

// Writes `values` as `dtype` (a supported one) into `out`.
void EncodeFloats(absl::Span<const float> values, v1::Dtype dtype,
                  std::string* out);

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_TENSOR_CODEC_H_
