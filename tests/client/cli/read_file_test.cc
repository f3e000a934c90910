#include "client/cli/read_file.h"

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::cli {
namespace {

TEST(ReadFileTest, ReadsEveryByte) {
  const std::string path = ::testing::TempDir() + "/read_file_bytes";
  const std::string bytes("line\r\n\0\xff end", 12);
  std::ofstream(path, std::ios::binary) << bytes;
  absl::StatusOr<std::string> content = ReadFile(path);
  ASSERT_TRUE(content.ok()) << content.status();
  EXPECT_EQ(*content, bytes);
}

TEST(ReadFileTest, EmptyFileIsEmpty) {
  const std::string path = ::testing::TempDir() + "/read_file_empty";
  std::ofstream(path, std::ios::binary).flush();
  absl::StatusOr<std::string> content = ReadFile(path);
  ASSERT_TRUE(content.ok()) << content.status();
  EXPECT_EQ(*content, "");
}

TEST(ReadFileTest, MissingFileIsNotFoundNamingIt) {
  const std::string path = ::testing::TempDir() + "/no-such-file.pem";
  absl::StatusOr<std::string> content = ReadFile(path);
  EXPECT_EQ(content.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(content.status().message(), "cannot read '" + path + "'");
}

}  // namespace
}  // namespace favor::cli
