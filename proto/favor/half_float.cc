#include "favor/half_float.h"

#include <cstring>

namespace favor {
namespace {

constexpr uint32_t kFloatSign = 0x80000000u;
constexpr uint32_t kFloatInfinity = 0x7f800000u;
constexpr uint32_t kFloatQuietBit = 0x00400000u;

// `bits` without its low `shift` bits (1 to 31), rounded to nearest, ties
// to even. A carry out of the mantissa moves into the exponent, which is
// the right rounding there too.
uint32_t ShiftRightRoundingToEven(uint32_t bits, int shift) {
  const uint32_t halfway = 1u << (shift - 1);
  const uint32_t rest = bits & ((1u << shift) - 1);
  uint32_t kept = bits >> shift;
  if (rest > halfway || (rest == halfway && (kept & 1u) != 0)) ++kept;
  return kept;
}

// A widened NaN is made quiet, so that no arithmetic on it traps.
float WidenedFloat(uint32_t bits) {
  const bool nan = (bits & ~kFloatSign) > kFloatInfinity;
  return FloatFromBits(nan ? bits | kFloatQuietBit : bits);
}

}  // namespace

uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float FloatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint16_t FloatToHalf(float value) {
  const uint32_t bits = FloatBits(value);
  const uint16_t sign = static_cast<uint16_t>((bits & kFloatSign) >> 16);
  const uint32_t magnitude = bits & ~kFloatSign;
  if (magnitude > kFloatInfinity) return sign | 0x7e00u;  // NaN
  // 65520 = 65504 + half an ulp: the tie goes to the even 0x7c00, infinity.
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;
  if (magnitude >= 0x38800000u) {  // a normal half (at least 2^-14)
    // Rebias the exponent from 127 to 15, then drop 13 mantissa bits.
    const uint32_t rebiased = magnitude - ((127u - 15u) << 23);
    return sign | static_cast<uint16_t>(ShiftRightRoundingToEven(rebiased, 13));
  }
  // Subnormal halves count units of 2^-24; 2^-25 (0x33000000) is the tie
  // between zero and the smallest of them, and goes to zero.
  if (magnitude <= 0x33000000u) return sign;
  const uint32_t exponent = magnitude >> 23;  // 102..112 here
  const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
  // value = mantissa * 2^(exponent - 150) = (mantissa >> shift) * 2^-24.
  const int shift = static_cast<int>(126u - exponent);  // 14..24
  return sign |
         static_cast<uint16_t>(ShiftRightRoundingToEven(mantissa, shift));
}

float HalfToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  const uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1fu) {  // infinity or NaN
    return WidenedFloat(sign | kFloatInfinity | (mantissa << 13));
  }
  if (exponent != 0) {
    return FloatFromBits(sign | ((exponent + 127u - 15u) << 23) |
                         (mantissa << 13));
  }
  // Zero or subnormal: mantissa * 2^-24, exact in float.
  const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
  return FloatFromBits(sign | FloatBits(magnitude));
}

uint16_t FloatToBFloat16(float value) {
  const uint32_t bits = FloatBits(value);
  if ((bits & ~kFloatSign) > kFloatInfinity) {  // NaN
    return static_cast<uint16_t>(((bits & kFloatSign) >> 16) | 0x7fc0u);
  }
  // The largest finite value rounds up to infinity the same way.
  return static_cast<uint16_t>(ShiftRightRoundingToEven(bits, 16));
}

float BFloat16ToFloat(uint16_t bfloat16) {
  return WidenedFloat(static_cast<uint32_t>(bfloat16) << 16);
}

}  // namespace favor
