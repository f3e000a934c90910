#include "server/service/tensor_codec.h"

#include <cmath>
#include <limits>
#include <string>

#include "gtest/gtest.h"

namespace favor::service {
namespace {

TEST(TensorCodecTest, HalfRoundsToNearestEven) {
  EXPECT_EQ(FloatToHalf(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);  // largest finite half
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);  // rounds to infinity
  EXPECT_EQ(FloatToHalf(1e10f), 0x7c00);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie: even
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::quiet_NaN()) & 0x7e00,
            0x7e00);
}

TEST(TensorCodecTest, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBFloat16(-1.0f), 0xbf80);
  EXPECT_EQ(FloatToBFloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie
  EXPECT_EQ(FloatToBFloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::quiet_NaN()), 0x7fc0);
}

TEST(TensorCodecTest, EncodesLittleEndian) {
  std::string out;
  EncodeFloats({1.0f, 2.0f}, v1::DTYPE_FLOAT16, &out);
  EXPECT_EQ(out, std::string("\x00\x3c\x00\x40", 4));
  EncodeFloats({1.0f}, v1::DTYPE_FLOAT32, &out);
  EXPECT_EQ(out, std::string("\x00\x00\x80\x3f", 4));
  EXPECT_EQ(BytesPerElement(v1::DTYPE_UNSPECIFIED), 0);
  EXPECT_EQ(BytesPerElement(v1::DTYPE_BFLOAT16), 2);
}

}  // namespace
}  // namespace favor::service
