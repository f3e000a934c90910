// CheckTensors (tensor_check.cc).
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/model/safetensors_test_util.h"

namespace favor::model {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class CheckTensorsTest : public SafetensorsTest {
 protected:
  void SetUp() override {
    SafetensorsTest::SetUp();
    const std::vector<uint8_t> six(6 * 4), two(2 * 4);
    path_ = dir_ + "/model.safetensors";
    ASSERT_TRUE(WriteSafetensors(path_, {{"a.weight", DType::kF32, {2, 3}, six},
                                         {"a.bias", DType::kF32, {2}, two},
                                         {"extra", DType::kF32, {3, 2}, six}})
                    .ok());
    auto file = SafetensorsFile::Open(path_);
    ASSERT_TRUE(file.ok()) << file.status();
    file_ = std::move(file).value();
  }

  std::string path_;
  std::unique_ptr<SafetensorsFile> file_;
};

TEST_F(CheckTensorsTest, AcceptsAnExactMatch) {
  EXPECT_TRUE(CheckTensors(*file_, {{"a.weight", {2, 3}},
                                    {"a.bias", {2}},
                                    {"extra", {3, 2}},
                                    {"optional", {7}, /*required=*/false}})
                  .ok());
}

TEST_F(CheckTensorsTest, ReportsMissingUnexpectedAndWrongShapesTogether) {
  const absl::Status status =
      CheckTensors(*file_, {{"a.weight", {3, 2}},
                            {"a.bias", {2}},
                            {"b.weight", {4}},
                            {"b.bias", {4}},
                            {"optional", {7}, /*required=*/false}});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  const std::string message(status.message());
  EXPECT_THAT(message, HasSubstr(path_));
  EXPECT_THAT(message, HasSubstr("2 missing: 'b.weight', 'b.bias'"));
  EXPECT_THAT(message, HasSubstr("1 unexpected: 'extra'"));
  EXPECT_THAT(message, HasSubstr("1 with the wrong shape or dtype: 'a.weight' "
                                 "(expected [3, 2], got [2, 3])"));
  EXPECT_THAT(message, Not(HasSubstr("optional")));
}

TEST_F(CheckTensorsTest, ChecksTheShapeOfOptionalTensorsThatArePresent) {
  const absl::Status status =
      CheckTensors(*file_, {{"a.weight", {2, 3}},
                            {"a.bias", {2}},
                            {"extra", {2, 3}, /*required=*/false}});
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("'extra' (expected [2, 3], got [3, 2])"));
}

TEST_F(CheckTensorsTest, AWeightStoredAsIntegersIsRefusedAndABufferIgnored) {
  const std::vector<uint8_t> eight(2 * 8);
  const std::string path = dir_ + "/buffers.safetensors";
  ASSERT_TRUE(WriteSafetensors(path, {{"w", DType::kI64, {2}, eight},
                                      {"position_ids", DType::kI64, {1, 2},
                                       eight}})
                  .ok());
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  const auto ignore = [](absl::string_view name) {
    return name == "position_ids";
  };
  const absl::Status status = CheckTensors(**file, {{"w", {2}}}, ignore);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("'w' (stored as I64; weights are F32, F16 or BF16)"));
}

TEST_F(CheckTensorsTest, CutsLongLists) {
  std::vector<ExpectedTensor> expected = {
      {"a.weight", {2, 3}}, {"a.bias", {2}}, {"extra", {3, 2}}};
  for (int i = 0; i < 30; ++i) {
    expected.push_back({absl::StrCat("layer.", i), {1}});
  }
  const std::string message(CheckTensors(*file_, expected).message());
  EXPECT_THAT(message, HasSubstr("30 missing"));
  EXPECT_THAT(message, HasSubstr("... and 10 more"));
  EXPECT_THAT(message, Not(HasSubstr("'layer.25'")));
}

}  // namespace
}  // namespace favor::model
