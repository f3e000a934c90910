// float32 <-> float16 (IEEE 754 binary16) and bfloat16 conversions of single
// values, as bit patterns: the element conversions of favor.v1.Tensor's
// FLOAT16 and BFLOAT16 dtypes, shared by the client (favor::Tensor) and the
// server (server/service/tensor_codec.h) so that both round the same way;
// and float32's own bit pattern, which they work on and which FLOAT32
// elements are.
//
// One behaviour for both formats:
// - Narrowing (float -> 16 bits) rounds to nearest, ties to even, as if the
//   exponent were unbounded: values from the largest finite value plus half
//   an ulp upwards become infinity (65520 for float16, whose largest finite
//   value is 65504), values at or below half the smallest subnormal become
//   zero; the sign is kept, zeros and infinities included.
// - Widening (16 bits -> float) is exact: every float16 and bfloat16 value
//   is a float.
// - NaN stays NaN, and always a quiet one, of the same sign. Narrowing drops
//   the payload (float16 0x7e00, bfloat16 0x7fc0, with the sign bit);
//   widening keeps it and sets the quiet bit.
// This is LibTorch's behaviour (c10::Half, c10::BFloat16) except that c10
// turns every NaN into a positive bfloat16 NaN.
#ifndef FAVOR_PROTO_FAVOR_HALF_FLOAT_H_
#define FAVOR_PROTO_FAVOR_HALF_FLOAT_H_

#include <cstdint>

namespace favor {

// The bits of a float32 and back (C++20's std::bit_cast).
uint32_t FloatBits(float value);
float FloatFromBits(uint32_t bits);

// IEEE 754 binary16: 1 sign, 5 exponent, 10 mantissa bits.
uint16_t FloatToHalf(float value);
float HalfToFloat(uint16_t half);

// bfloat16: the upper 16 bits of a binary32 (1 sign, 8 exponent, 7 mantissa
// bits).
uint16_t FloatToBFloat16(float value);
float BFloat16ToFloat(uint16_t bfloat16);

}  // namespace favor

#endif  // FAVOR_PROTO_FAVOR_HALF_FLOAT_H_
