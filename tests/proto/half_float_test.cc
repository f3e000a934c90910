// favor/half_float.h against references written independently of it: the
// value of a bit pattern from its fields with std::ldexp in double, and the
// rounding of a float as the nearest entry of a table of every finite value
// (ties to the even pattern). Every 16-bit pattern is widened and narrowed
// back; narrowing is checked at every rounding boundary (each value, each
// midpoint between neighbours and the floats either side of it), on a sweep
// over the floats, and on the edge cases by name.
#include "favor/half_float.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace favor {
namespace {

// A 16-bit format: exponent and mantissa widths, and the conversions under
// test.
struct Format {
  const char* name;
  int exponent_bits;
  int mantissa_bits;
  uint16_t (*narrow)(float);
  float (*widen)(uint16_t);

  int bias() const { return (1 << (exponent_bits - 1)) - 1; }
  uint16_t infinity() const {
    return static_cast<uint16_t>(((1 << exponent_bits) - 1) << mantissa_bits);
  }
  uint16_t quiet_nan() const {
    return static_cast<uint16_t>(infinity() | (1 << (mantissa_bits - 1)));
  }
  bool is_nan(uint16_t bits) const { return (bits & 0x7fffu) > infinity(); }

  // The value of a non-NaN pattern, from its fields.
  double Value(uint16_t bits) const {
    const int exponent = (bits & 0x7fff) >> mantissa_bits;
    const int mantissa = bits & ((1 << mantissa_bits) - 1);
    const double sign = (bits & 0x8000) != 0 ? -1.0 : 1.0;
    if (bits == infinity() || bits == (infinity() | 0x8000)) {
      return sign * std::numeric_limits<double>::infinity();
    }
    if (exponent == 0) {
      return sign * std::ldexp(mantissa, 1 - bias() - mantissa_bits);
    }
    return sign * std::ldexp((1 << mantissa_bits) + mantissa,
                             exponent - bias() - mantissa_bits);
  }
};

const Format kHalf = {"float16", 5, 10, FloatToHalf, HalfToFloat};
const Format kBFloat16 = {"bfloat16", 8, 7, FloatToBFloat16, BFloat16ToFloat};

// Rounds floats to a format by looking them up in the table of its
// non-negative finite values, plus the next power of two standing for
// infinity (the value the largest finite one would round up to were the
// exponent unbounded).
class TableRounding {
 public:
  explicit TableRounding(const Format& format) : format_(format) {
    for (uint16_t bits = 0; bits < format.infinity(); ++bits) {
      values_.push_back(format.Value(bits));
    }
    const double largest = values_.back();
    values_.push_back(
        largest + std::ldexp(1.0, std::ilogb(largest) - format.mantissa_bits));
  }

  // The pattern nearest to `value` (not NaN), ties to the even pattern.
  uint16_t Round(float value) const {
    const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
    const double magnitude = std::fabs(static_cast<double>(value));
    if (magnitude >= values_.back()) return sign | format_.infinity();
    const size_t upper = static_cast<size_t>(
        std::lower_bound(values_.begin(), values_.end(), magnitude) -
        values_.begin());
    if (values_[upper] == magnitude || upper == 0) {
      return sign | static_cast<uint16_t>(upper);
    }
    const size_t lower = upper - 1;
    const double below = magnitude - values_[lower];
    const double above = values_[upper] - magnitude;
    size_t nearest = below < above ? lower : upper;
    if (below == above) nearest = lower % 2 == 0 ? lower : upper;
    return sign | static_cast<uint16_t>(nearest);
  }

  // Every value, every midpoint and the floats either side of the
  // midpoints, both signs: where rounding can go wrong.
  std::vector<float> Boundaries() const {
    std::vector<float> floats;
    const float infinity = std::numeric_limits<float>::infinity();
    for (size_t i = 0; i + 1 < values_.size(); ++i) {
      const float midpoint =
          static_cast<float>((values_[i] + values_[i + 1]) / 2);
      for (float value : {static_cast<float>(values_[i]), midpoint,
                          std::nextafter(midpoint, 0.0f),
                          std::nextafter(midpoint, infinity)}) {
        floats.push_back(value);
        floats.push_back(-value);
      }
    }
    return floats;
  }

 private:
  const Format& format_;
  std::vector<double> values_;
};

class HalfFloatTest : public ::testing::TestWithParam<const Format*> {};

TEST_P(HalfFloatTest, EveryPatternWidensExactlyAndNarrowsBack) {
  const Format& format = *GetParam();
  for (uint32_t pattern = 0; pattern <= 0xffff; ++pattern) {
    const uint16_t bits = static_cast<uint16_t>(pattern);
    if (format.is_nan(bits)) continue;
    const float wide = format.widen(bits);
    ASSERT_EQ(static_cast<double>(wide), format.Value(bits))
        << format.name << " 0x" << std::hex << pattern;
    ASSERT_EQ(std::signbit(wide), (bits & 0x8000) != 0)
        << format.name << " 0x" << std::hex << pattern;
    ASSERT_EQ(format.narrow(wide), bits)
        << format.name << " 0x" << std::hex << pattern;
  }
}

TEST_P(HalfFloatTest, EveryNaNStaysAQuietNaNOfItsSign) {
  const Format& format = *GetParam();
  for (uint32_t pattern = 0; pattern <= 0xffff; ++pattern) {
    const uint16_t bits = static_cast<uint16_t>(pattern);
    if (!format.is_nan(bits)) continue;
    const float wide = format.widen(bits);
    ASSERT_TRUE(std::isnan(wide))
        << format.name << " 0x" << std::hex << pattern;
    ASSERT_NE(FloatBits(wide) & 0x00400000u, 0u)  // the quiet bit
        << format.name << " 0x" << std::hex << pattern;
    const uint16_t sign = bits & 0x8000;
    ASSERT_EQ(std::signbit(wide), sign != 0);
    ASSERT_EQ(format.narrow(wide), sign | format.quiet_nan())
        << format.name << " 0x" << std::hex << pattern;
  }
  // Float NaNs, quiet and signalling, with payloads and both signs.
  for (uint32_t nan : {0x7fc00000u, 0x7f800001u, 0x7fa00000u, 0x7fbfffffu,
                       0x7f801234u, 0x7fffffffu}) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      EXPECT_EQ(format.narrow(FloatFromBits(sign | nan)),
                (sign >> 16) | format.quiet_nan())
          << format.name << " 0x" << std::hex << (sign | nan);
    }
  }
}

TEST_P(HalfFloatTest, NarrowingRoundsToNearestEvenAtEveryBoundary) {
  const Format& format = *GetParam();
  const TableRounding reference(format);
  for (float value : reference.Boundaries()) {
    ASSERT_EQ(format.narrow(value), reference.Round(value))
        << format.name << " of " << value << " (0x" << std::hex
        << FloatBits(value) << ")";
  }
}

TEST_P(HalfFloatTest, NarrowingMatchesTheReferenceOverTheFloats) {
  const Format& format = *GetParam();
  const TableRounding reference(format);
  // About four million floats spread over every exponent, both signs; an
  // odd stride reaches every low-bit pattern.
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 1031) {
    const float value = FloatFromBits(static_cast<uint32_t>(bits));
    if (std::isnan(value)) continue;
    ASSERT_EQ(format.narrow(value), reference.Round(value))
        << format.name << " of " << value << " (0x" << std::hex << bits << ")";
  }
}

std::string FormatName(const ::testing::TestParamInfo<const Format*>& param) {
  return param.param->name;
}

INSTANTIATE_TEST_SUITE_P(Formats, HalfFloatTest,
                         ::testing::Values(&kHalf, &kBFloat16), FormatName);

TEST(HalfFloatEdgeTest, Float32Bits) {
  EXPECT_EQ(FloatBits(1.0f), 0x3f800000u);
  EXPECT_EQ(FloatBits(-0.0f), 0x80000000u);
  EXPECT_EQ(FloatFromBits(0xc0000000u), -2.0f);
  EXPECT_EQ(FloatFromBits(0x00000001u),
            std::numeric_limits<float>::denorm_min());
}

TEST(HalfFloatEdgeTest, Float16) {
  const float infinity = std::numeric_limits<float>::infinity();
  EXPECT_EQ(FloatToHalf(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(infinity), 0x7c00);
  EXPECT_EQ(FloatToHalf(-infinity), 0xfc00);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);  // largest finite
  EXPECT_EQ(FloatToHalf(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);  // the tie goes to infinity
  EXPECT_EQ(FloatToHalf(-1e10f), 0xfc00);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_EQ(FloatToHalf(0x1p-14f), 0x0400);             // smallest normal
  EXPECT_EQ(FloatToHalf(0x1p-14f - 0x1p-25f), 0x0400);  // tie: up to even
  EXPECT_EQ(FloatToHalf(0x1p-24f), 0x0001);             // smallest subnormal
  EXPECT_EQ(FloatToHalf(0x1p-25f), 0x0000);  // tie: down to even zero
  EXPECT_EQ(FloatToHalf(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
  EXPECT_EQ(FloatToHalf(-0x1p-25f), 0x8000);
  EXPECT_EQ(FloatToHalf(3 * 0x1p-25f), 0x0002);  // tie: up to even
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(FloatToHalf(-std::numeric_limits<float>::denorm_min()), 0x8000);
  EXPECT_EQ(FloatToHalf(1.0f + 0x1p-11f), 0x3c00);      // tie: down to even
  EXPECT_EQ(FloatToHalf(1.0f + 3 * 0x1p-11f), 0x3c02);  // tie: up to even
  EXPECT_EQ(HalfToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(HalfToFloat(0x03ff), 0x3ffp-24f);  // largest subnormal
  EXPECT_EQ(HalfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(HalfToFloat(0xfc00), -infinity);
}

TEST(HalfFloatEdgeTest, BFloat16) {
  const float infinity = std::numeric_limits<float>::infinity();
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBFloat16(-0.0f), 0x8000);
  EXPECT_EQ(FloatToBFloat16(-infinity), 0xff80);
  EXPECT_EQ(FloatToBFloat16(1.0f + 0x1p-8f), 0x3f80);      // tie: down
  EXPECT_EQ(FloatToBFloat16(1.0f + 3 * 0x1p-8f), 0x3f82);  // tie: up
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(FloatToBFloat16(0x1.fep127f), 0x7f7f);  // largest finite
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(FloatToBFloat16(0x1p-133f), 0x0001);  // smallest subnormal
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::quiet_NaN()), 0x7fc0);
  EXPECT_EQ(BFloat16ToFloat(0x7f7f), 0x1.fep127f);
  EXPECT_EQ(BFloat16ToFloat(0x0001), 0x1p-133f);
}

}  // namespace
}  // namespace favor
