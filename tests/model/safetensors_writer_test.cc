// WriteSafetensors (safetensors_writer.cc).
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/model/safetensors_test_util.h"

namespace favor::model {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST_F(SafetensorsTest, WriterRoundTripsF32F16AndBf16) {
  const float floats[] = {1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, 7.0f};
  std::vector<uint8_t> f32(sizeof(floats));
  std::memcpy(f32.data(), floats, sizeof(floats));
  // 1.0, -2.0, 0.5 in IEEE half and in bfloat16, little-endian.
  const std::vector<uint8_t> f16 = {0x00, 0x3c, 0x00, 0xc0, 0x00, 0x38};
  const std::vector<uint8_t> bf16 = {0x80, 0x3f, 0x00, 0xc0, 0x00, 0x3f};
  const std::vector<TensorToWrite> tensors = {
      {"half", DType::kF16, {3}, f16},
      {"encoder.weight", DType::kF32, {2, 3}, f32},
      {"brain", DType::kBF16, {1, 3}, bf16},
  };
  const std::string path = dir_ + "/model.safetensors";
  ASSERT_TRUE(WriteSafetensors(path, tensors, {{"format", "pt"}}).ok());

  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_THAT((*file)->TensorNames(),
              ElementsAre("brain", "encoder.weight", "half"));
  EXPECT_EQ((*file)->metadata().at("format"), "pt");
  for (const TensorToWrite& expected : tensors) {
    auto view = (*file)->Get(expected.name);
    ASSERT_TRUE(view.ok()) << view.status();
    EXPECT_EQ(view->dtype, expected.dtype);
    EXPECT_EQ(view->shape, expected.shape);
    EXPECT_EQ(
        std::vector<uint8_t>(view->data, view->data + view->byte_size),
        std::vector<uint8_t>(expected.bytes.begin(), expected.bytes.end()));
    EXPECT_EQ(
        reinterpret_cast<uintptr_t>(view->data) % DTypeSize(expected.dtype), 0u)
        << expected.name << " is not aligned";
  }
}

TEST_F(SafetensorsTest, WriterPadsTheHeaderAndLeavesNoTemporaryFile) {
  const std::vector<uint8_t> one = {0, 0, 0x80, 0x3f};
  const std::string path = dir_ + "/padded.safetensors";
  ASSERT_TRUE(WriteSafetensors(path, {{"x", DType::kF32, {1}, one}}).ok());
  EXPECT_EQ(std::filesystem::file_size(path) % 8, 4u);  // 8k header + 4 data
  int entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    (void)entry;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
  // Writing again replaces the file.
  ASSERT_TRUE(WriteSafetensors(path, {}).ok());
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->num_tensors(), 0u);
}

TEST_F(SafetensorsTest, WriterRejectsInconsistentTensors) {
  const std::vector<uint8_t> four(4);
  const std::string path = dir_ + "/bad.safetensors";
  auto status = WriteSafetensors(path, {{"w", DType::kF32, {2}, four}});
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("'w'"), HasSubstr("4 bytes given")));
  status = WriteSafetensors(
      path, {{"w", DType::kF32, {1}, four}, {"w", DType::kF32, {1}, four}});
  EXPECT_THAT(std::string(status.message()), HasSubstr("duplicate"));
  status = WriteSafetensors(path, {{"__metadata__", DType::kF32, {1}, four}});
  EXPECT_THAT(std::string(status.message()), HasSubstr("reserved"));
  status = WriteSafetensors(path, {{"w", DType::kF32, {-1}, four}});
  EXPECT_THAT(std::string(status.message()), HasSubstr("negative"));
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(SafetensorsTest, WriterReportsAnUnwritableDirectory) {
  auto status = WriteSafetensors(dir_ + "/no/such/dir/x.safetensors", {});
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr("no/such/dir"));
}

}  // namespace
}  // namespace favor::model
