// favor::Tensor: byte layout, dtype conversions and validation.
#include "favor/tensor.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(TensorTest, Float32IsLittleEndianRowMajor) {
  const Tensor tensor = Tensor::FromFloats({2, 2}, {1.0f, -2.0f, 0.5f, 3.0f});
  EXPECT_EQ(tensor.num_elements(), 4);
  ASSERT_EQ(tensor.data.size(), 16u);
  // 1.0f is 0x3f800000: little-endian bytes 00 00 80 3f.
  EXPECT_EQ(tensor.data.substr(0, 4), std::string("\x00\x00\x80\x3f", 4));
  EXPECT_TRUE(tensor.Validate().ok());
  EXPECT_THAT(*tensor.ToFloats(), ElementsAre(1.0f, -2.0f, 0.5f, 3.0f));
}

TEST(TensorTest, Float16RoundTripsRepresentableValues) {
  const std::vector<float> values = {
      0.0f,           -0.0f,    1.0f,
      -1.5f,          65504.0f, 6.1035156e-05f,  // min normal
      5.9604645e-08f,                            // min subnormal
      0.333251953125f};
  const Tensor tensor = Tensor::FromFloats(
      {static_cast<int64_t>(values.size())}, values, Dtype::kFloat16);
  EXPECT_EQ(tensor.data.size(), values.size() * 2);
  // 1.0 in binary16 is 0x3c00.
  EXPECT_EQ(tensor.data.substr(4, 2), std::string("\x00\x3c", 2));
  EXPECT_EQ(*tensor.ToFloats(), values);
}

TEST(TensorTest, Float16RoundsToNearestEvenAndOverflowsToInfinity) {
  const Tensor tensor = Tensor::FromFloats(
      {4}, {1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 70000.0f, -1e-9f},
      Dtype::kFloat16);
  const std::vector<float> back = *tensor.ToFloats();
  EXPECT_EQ(back[0], 1.0f);                // tie: to even (down)
  EXPECT_EQ(back[1], 1.0f + 2.0f / 1024);  // tie: to even (up)
  EXPECT_TRUE(std::isinf(back[2]));
  EXPECT_EQ(back[3], 0.0f);
  EXPECT_TRUE(std::signbit(back[3]));
}

TEST(TensorTest, BFloat16KeepsTheUpperHalf) {
  const Tensor tensor = Tensor::FromFloats(
      {3}, {1.0f, -2.5f, 1.0f + 1.0f / 256}, Dtype::kBFloat16);
  EXPECT_EQ(tensor.data.substr(0, 2), std::string("\x80\x3f", 2));
  EXPECT_THAT(*tensor.ToFloats(), ElementsAre(1.0f, -2.5f, 1.0f));
  const Tensor nan = Tensor::FromFloats(
      {1}, {std::numeric_limits<float>::quiet_NaN()}, Dtype::kBFloat16);
  EXPECT_TRUE(std::isnan((*nan.ToFloats())[0]));
}

TEST(TensorTest, ValidateNamesTheProblem) {
  Tensor tensor = Tensor::FromFloats({2, 3}, {1, 2, 3, 4, 5, 6});
  tensor.data.pop_back();
  EXPECT_EQ(tensor.Validate().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(tensor.Validate().message()), HasSubstr("24 bytes"));
  EXPECT_EQ(tensor.ToFloats().status().code(),
            absl::StatusCode::kInvalidArgument);
  tensor = Tensor::FromFloats({2, 0}, {});
  EXPECT_THAT(std::string(tensor.Validate().message()),
              HasSubstr("dimension below 1"));
  EXPECT_EQ(DtypeSize(Dtype::kBFloat16), 2u);
  EXPECT_STREQ(DtypeName(Dtype::kFloat16), "float16");
}

}  // namespace
}  // namespace favor
