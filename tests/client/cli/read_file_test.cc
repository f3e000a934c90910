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
  EXPECT_EQ(content.status().message(),
            "cannot read '" + path + "': No such file or directory");
}

// A directory or an I/O error is a Status, not an exception: libstdc++'s
// filebuf throws from the read, which uncaught would exit 134.
TEST(ReadFileTest, DirectoryIsNotFoundNotAnException) {
  const std::string path = ::testing::TempDir();
  absl::StatusOr<std::string> content = ReadFile(path);
  EXPECT_EQ(content.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(content.status().message(),
            "cannot read '" + path + "': Is a directory");
}

TEST(ReadFileTest, EndlessFileStopsAtTheLimit) {
  absl::StatusOr<std::string> content = ReadFile("/dev/zero", 1 << 20);
  EXPECT_EQ(content.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(content.status().message()),
              ::testing::HasSubstr("larger than 1048576 bytes"));
  const std::string path = ::testing::TempDir() + "/read_file_limit";
  std::ofstream(path, std::ios::binary) << std::string(1000, 'x');
  EXPECT_TRUE(ReadFile(path, 1000).ok());
  EXPECT_EQ(ReadFile(path, 999).status().code(),
            absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace favor::cli
