#include "client/cli/attend_input.h"

#include <cstdio>
#include <fstream>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(AttendInputTest, ShapesFromTheQueryShape) {
  auto shapes = ParseAttendShapes("2,4,16,8", 0, 0);
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  EXPECT_THAT(shapes->query, ElementsAre(2, 4, 16, 8));
  EXPECT_THAT(shapes->key, ElementsAre(2, 4, 16, 8));
  EXPECT_THAT(shapes->value, ElementsAre(2, 4, 16, 8));
  auto cross = ParseAttendShapes("1,2,3,4", 10, 6);
  ASSERT_TRUE(cross.ok());
  EXPECT_THAT(cross->key, ElementsAre(1, 2, 10, 4));
  EXPECT_THAT(cross->value, ElementsAre(1, 2, 10, 6));
}

TEST(AttendInputTest, BadShapesAreInvalidArgument) {
  for (const char* shape : {"", "1,2,3", "1,2,3,4,5", "1,0,3,4", "a,b,c,d"}) {
    EXPECT_EQ(ParseAttendShapes(shape, 0, 0).status().code(),
              absl::StatusCode::kInvalidArgument)
        << shape;
  }
  EXPECT_EQ(ParseAttendShapes("1,1,1,1", -1, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A shape past the server's limit is an error before anything is
// allocated: a large one would throw bad_alloc, or overflow int64
// (length_error), and either, uncaught, exit 134.
TEST(AttendInputTest, ShapesPastTheServersLimitAreInvalidArgument) {
  for (const char* shape : {"1,1,100000,100000", "3037000500,3037000500,1,1",
                            "9223372036854775807,2,1,1"}) {
    const absl::Status status = ParseAttendShapes(shape, 0, 0).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << shape;
    EXPECT_THAT(std::string(status.message()),
                ::testing::HasSubstr("of more than 268435456 elements"))
        << shape;
  }
  // The limit itself is allowed; the key's length counts too.
  EXPECT_TRUE(ParseAttendShapes("1,1,16384,16384", 0, 0).ok());
  EXPECT_FALSE(ParseAttendShapes("1,1,1,16384", 16385, 0).ok());
}

TEST(AttendInputTest, RandomTensorsAreSeededAndValid) {
  const Tensor a = RandomTensor({1, 2, 3, 4}, 7);
  EXPECT_TRUE(a.Validate().ok());
  EXPECT_EQ(a.num_elements(), 24);
  EXPECT_EQ(a.data, RandomTensor({1, 2, 3, 4}, 7).data);
  EXPECT_NE(a.data, RandomTensor({1, 2, 3, 4}, 8).data);
}

TEST(AttendInputTest, RawFilesRoundTrip) {
  const std::string path = ::testing::TempDir() + "/tensor.f32";
  const Tensor tensor =
      Tensor::FromFloats({1, 1, 2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(WriteTensorFile(path, tensor).ok());
  auto read = ReadTensorFile(path, {1, 1, 2, 3});
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->data, tensor.data);
  auto wrong = ReadTensorFile(path, {1, 1, 2, 4});
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong.status().message(), HasSubstr("holds 24 bytes"));
  EXPECT_THAT(wrong.status().message(), HasSubstr("needs 32"));
  std::remove(path.c_str());
  EXPECT_EQ(ReadTensorFile(path, {1}).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace favor::cli
