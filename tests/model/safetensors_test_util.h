// Helpers of the safetensors tests: files written byte by byte.
#ifndef FAVOR_TESTS_MODEL_SAFETENSORS_TEST_UTIL_H_
#define FAVOR_TESTS_MODEL_SAFETENSORS_TEST_UTIL_H_

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/model/safetensors.h"
#include "tests/model/temp_dir_test.h"

namespace favor::model {

// The 8-byte little-endian length field.
inline std::string LengthField(uint64_t length) {
  std::string field(8, '\0');
  for (int i = 0; i < 8; ++i) {
    field[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  }
  return field;
}

// A whole file: length field, header, data.
inline std::string FileBytes(const std::string& header,
                             const std::string& data) {
  return LengthField(header.size()) + header + data;
}

// Each test writes its fixtures, byte by byte, into a fresh directory.
class SafetensorsTest : public TempDirTest {
 protected:
  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = dir_ + "/" + name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    return path;
  }

  // Opens `bytes` written as `name` and expects an INVALID_ARGUMENT error
  // that names the file and contains every one of `parts`.
  void ExpectRejected(const std::string& name, const std::string& bytes,
                      const std::vector<std::string>& parts) {
    const std::string path = Write(name, bytes);
    auto file = SafetensorsFile::Open(path);
    ASSERT_FALSE(file.ok()) << name << " was accepted";
    EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument)
        << file.status();
    EXPECT_THAT(std::string(file.status().message()),
                ::testing::HasSubstr(path));
    for (const std::string& part : parts) {
      EXPECT_THAT(std::string(file.status().message()),
                  ::testing::HasSubstr(part));
    }
  }
};

// A valid two-tensor file written by hand: "a" F32 [2] then "b" F16 [3].
inline const std::string kValidHeader =
    R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
    R"("b":{"dtype":"F16","shape":[3],"data_offsets":[8,14]}})";
inline const std::string kValidData = "AAAABBBBcccccc";

}  // namespace favor::model

#endif  // FAVOR_TESTS_MODEL_SAFETENSORS_TEST_UTIL_H_
