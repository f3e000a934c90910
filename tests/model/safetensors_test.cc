#include "server/model/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <random>
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

TEST_F(SafetensorsTest, OpensAHandWrittenFile) {
  const std::string path =
      Write("valid.safetensors", FileBytes(kValidHeader, kValidData));
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_THAT((*file)->TensorNames(), ElementsAre("a", "b"));
  EXPECT_TRUE((*file)->metadata().empty());
  auto b = (*file)->Get("b");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->dtype, DType::kF16);
  EXPECT_THAT(b->shape, ElementsAre(3));
  EXPECT_EQ(b->num_elements(), 3);
  ASSERT_EQ(b->byte_size, 6u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b->data), 6), "cccccc");
}

TEST_F(SafetensorsTest, GetOfAnUnknownNameIsNotFoundNamingFileAndTensor) {
  const std::string path =
      Write("valid.safetensors", FileBytes(kValidHeader, kValidData));
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  auto missing = (*file)->Get("nope");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()),
              AllOf(HasSubstr(path), HasSubstr("'nope'")));
}

TEST_F(SafetensorsTest, MissingFileIsNotFound) {
  auto file = SafetensorsFile::Open(dir_ + "/absent.safetensors");
  EXPECT_EQ(file.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(file.status().message()),
              HasSubstr("absent.safetensors"));
}

TEST_F(SafetensorsTest, RejectsADirectory) {
  auto file = SafetensorsFile::Open(dir_);
  EXPECT_FALSE(file.ok());
  EXPECT_THAT(std::string(file.status().message()), HasSubstr(dir_));
}

// A named pipe must not make Open wait for a writer: a model.safetensors
// FIFO would hang favor-server for good.
TEST_F(SafetensorsTest, RefusesANamedPipeWithoutWaiting) {
  const std::string path = dir_ + "/model.safetensors";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  auto opening = std::async(std::launch::async,
                            [&path] { return SafetensorsFile::Open(path); });
  if (opening.wait_for(std::chrono::seconds(10)) !=
      std::future_status::ready) {
    const int writer = open(path.c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0) close(writer);
    FAIL() << "SafetensorsFile::Open waited on a named pipe";
  }
  auto file = opening.get();
  EXPECT_FALSE(file.ok());
  EXPECT_THAT(std::string(file.status().message()),
              AllOf(HasSubstr(path), HasSubstr("not a regular file")));
}

TEST_F(SafetensorsTest, RejectsFilesShorterThanTheLengthField) {
  ExpectRejected("empty", "", {"0 bytes", "8-byte header length"});
  ExpectRejected("seven", "1234567", {"7 bytes"});
}

TEST_F(SafetensorsTest, RejectsTruncatedFiles) {
  const std::string bytes = FileBytes(kValidHeader, kValidData);
  // Cut inside the data: the last tensor runs past the end.
  ExpectRejected("truncated_data", bytes.substr(0, bytes.size() - 3),
                 {"tensor 'b'", "past the end"});
  // Cut inside the header.
  ExpectRejected("truncated_header", bytes.substr(0, 20),
                 {"exceeds the 12 bytes"});
}

TEST_F(SafetensorsTest, EveryTruncationIsRejected) {
  const std::string bytes = FileBytes(kValidHeader, kValidData);
  for (size_t size = 0; size < bytes.size(); ++size) {
    const std::string path = Write("cut", bytes.substr(0, size));
    EXPECT_FALSE(SafetensorsFile::Open(path).ok()) << "size " << size;
  }
}

TEST_F(SafetensorsTest, AcceptsPaddedHeaderAndEmptyFile) {
  const std::string path = Write("empty", FileBytes("{}      ", ""));
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->num_tensors(), 0u);
}

TEST_F(SafetensorsTest, ZeroSizedTensorsAreFine) {
  const std::string path = Write(
      "zero",
      FileBytes(R"({"w":{"dtype":"F32","shape":[0, 5],"data_offsets":[0,0]},)"
                R"("s":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})",
                "1234"));
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->Get("w")->byte_size, 0u);
  EXPECT_EQ((*file)->Get("s")->num_elements(), 1);  // a scalar
}

TEST_F(SafetensorsTest, SurvivesRandomCorruption) {
  const std::string original = FileBytes(kValidHeader, kValidData);
  std::mt19937 random(12345);
  std::uniform_int_distribution<size_t> position(0, 8 + kValidHeader.size());
  std::uniform_int_distribution<int> byte(0, 255);
  int accepted = 0;
  for (int trial = 0; trial < 500; ++trial) {
    std::string bytes = original;
    for (int flips = 0; flips < 1 + trial % 4; ++flips) {
      bytes[position(random)] = static_cast<char>(byte(random));
    }
    auto file = SafetensorsFile::Open(Write("fuzz", bytes));
    if (!file.ok()) continue;
    ++accepted;
    for (const std::string& name : (*file)->TensorNames()) {
      auto view = (*file)->Get(name);
      ASSERT_TRUE(view.ok());
      // Touch every byte: out of bounds would trip ASan.
      uint8_t sum = 0;
      for (size_t i = 0; i < view->byte_size; ++i) sum ^= view->data[i];
      (void)sum;
    }
  }
  EXPECT_LT(accepted, 500);
}

}  // namespace
}  // namespace favor::model
