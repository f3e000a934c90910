// The header checks of safetensors_header.cc, through SafetensorsFile::Open.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/model/safetensors_test_util.h"

namespace favor::model {
namespace {

using ::testing::HasSubstr;

TEST_F(SafetensorsTest, RejectsHeaderLongerThanTheFile) {
  ExpectRejected("long_header", LengthField(1000) + "{}",
                 {"header length 1000 exceeds the 2 bytes"});
  ExpectRejected("huge_header", LengthField(~uint64_t{0}) + "{}",
                 {"header length 18446744073709551615"});
}

TEST_F(SafetensorsTest, RejectsHeaderAboveTheCap) {
  // The length is checked against the cap without reading the header.
  const uint64_t length = SafetensorsFile::kMaxHeaderBytes + 1;
  const std::string path = dir_ + "/capped";
  {
    std::ofstream out(path, std::ios::binary);
    out << LengthField(length);
  }
  std::filesystem::resize_file(path, 8 + length);
  auto file = SafetensorsFile::Open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(std::string(file.status().message()),
              HasSubstr("exceeds the limit"));
}

TEST_F(SafetensorsTest, RejectsNonJsonHeader) {
  ExpectRejected("garbage", FileBytes("not json at all", ""),
                 {"header: not valid JSON", "parse error"});
  ExpectRejected("binary", FileBytes(std::string("\x01\xff\x00{", 4), ""),
                 {"not valid JSON"});
  ExpectRejected("empty_header", FileBytes("", ""), {"not valid JSON"});
  ExpectRejected("two_values", FileBytes("{} {}", ""), {"not valid JSON"});
}

TEST_F(SafetensorsTest, RejectsJsonThatIsNotAnObject) {
  ExpectRejected("array", FileBytes("[1, 2]", ""),
                 {"must be a JSON object, got array"});
  ExpectRejected("string", FileBytes(R"("hello")", ""),
                 {"must be a JSON object, got string 'hello'"});
  ExpectRejected("entry_not_object", FileBytes(R"({"w": 3})", ""),
                 {"tensor 'w'", "entry must be an object, got number 3"});
}

TEST_F(SafetensorsTest, ReadsTheDtypesOfCheckpointBuffers) {
  // A checkpoint's buffers (RoBERTa's I64 position_ids) are read, so that
  // the file opens; CheckTensors refuses them as weights.
  for (const auto& [dtype, size] :
       {std::pair{"F64", 8}, {"I64", 8}, {"I32", 4}, {"I16", 2}, {"I8", 1},
        {"U8", 1}, {"BOOL", 1}}) {
    const std::string header =
        absl::StrCat(R"({"b":{"dtype":")", dtype,
                     R"(","shape":[2],"data_offsets":[0,)", 2 * size, "]}}");
    const std::string path = Write(absl::StrCat("dtype_", dtype),
                                   FileBytes(header, std::string(2 * size, '\0')));
    auto file = SafetensorsFile::Open(path);
    ASSERT_TRUE(file.ok()) << dtype << ": " << file.status();
    EXPECT_EQ(DTypeName((*file)->Get("b")->dtype), dtype);
  }
  // One byte short for an I64 pair.
  ExpectRejected("dtype_I64_short",
                 FileBytes(R"({"b":{"dtype":"I64","shape":[2],"data_offsets":[0,15]}})",
                           std::string(15, '\0')),
                 {"tensor 'b'"});
}

TEST_F(SafetensorsTest, RejectsUnsupportedDtypesByName) {
  for (const char* dtype : {"F8_E4M3", "C64", "f32"}) {
    const std::string header =
        absl::StrCat(R"({"weights.x":{"dtype":")", dtype,
                     R"(","shape":[1],"data_offsets":[0,8]}})");
    ExpectRejected(absl::StrCat("dtype_", dtype),
                   FileBytes(header, std::string(8, '\0')),
                   {"tensor 'weights.x'",
                    absl::StrCat("unsupported dtype '", dtype, "'")});
  }
  ExpectRejected(
      "dtype_number",
      FileBytes(R"({"w":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})",
                "1234"),
      {"tensor 'w'", "\"dtype\" must be a string"});
}

TEST_F(SafetensorsTest, RejectsBadShapes) {
  auto header = [](const std::string& shape, uint64_t end) {
    return absl::StrCat(R"({"w":{"dtype":"F32","shape":)", shape,
                        R"(,"data_offsets":[0,)", end, "]}}");
  };
  ExpectRejected("negative", FileBytes(header("[-1]", 4), "1234"),
                 {"tensor 'w'", "shape[0] is number -1"});
  ExpectRejected("fraction", FileBytes(header("[1.5]", 4), "1234"),
                 {"shape[0] is number 1.5"});
  ExpectRejected("above_int64",
                 FileBytes(header("[18446744073709551615]", 4), "1234"),
                 {"shape[0] is number 18446744073709551615"});
  ExpectRejected("not_array", FileBytes(header("4", 4), "1234"),
                 {"\"shape\" must be an array"});
  // 2^32 · 2^32 elements overflow 64 bits: must not wrap to a small size.
  ExpectRejected("overflow",
                 FileBytes(header("[4294967296, 4294967296, 4]", 4), "1234"),
                 {"tensor 'w'", "overflows"});
  // 2^62 elements of 4 bytes overflow only in the byte count.
  ExpectRejected("byte_overflow",
                 FileBytes(header("[4611686018427387904]", 4), "1234"),
                 {"overflows"});
}

TEST_F(SafetensorsTest, RejectsOffsetsPastTheEnd) {
  ExpectRejected(
      "past_end",
      FileBytes(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})",
                "12345678"),
      {"tensor 'w'", "data_offsets end 16 is past the end of the 8-byte"});
  ExpectRejected(
      "huge_offsets",
      FileBytes(
          R"({"w":{"dtype":"F32","shape":[1],)"
          R"("data_offsets":[18446744073709551612,18446744073709551615]}})",
          "1234"),
      {"tensor 'w'", "past the end"});
}

TEST_F(SafetensorsTest, RejectsMalformedOffsets) {
  auto header = [](const std::string& offsets) {
    return absl::StrCat(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":)",
                        offsets, "}}");
  };
  ExpectRejected("reversed", FileBytes(header("[4,0]"), "1234"),
                 {"tensor 'w'", "begin 4 is after end 0"});
  ExpectRejected("three", FileBytes(header("[0,2,4]"), "1234"),
                 {"\"data_offsets\" must be [begin, end]"});
  ExpectRejected("negative", FileBytes(header("[-4,0]"), "1234"),
                 {"\"data_offsets\" must be [begin, end]"});
  ExpectRejected("strings", FileBytes(header(R"(["0","4"])"), "1234"),
                 {"\"data_offsets\" must be [begin, end]"});
}

TEST_F(SafetensorsTest, RejectsSpanThatDisagreesWithShapeAndDtype) {
  ExpectRejected(
      "mismatch",
      FileBytes(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                "12345678"),
      {"tensor 'w'", "data_offsets span 8 bytes", "[3] of F32 needs 12"});
}

TEST_F(SafetensorsTest, RejectsOverlappingTensorsNamingBoth) {
  ExpectRejected(
      "overlap",
      FileBytes(
          R"({"first":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
          R"("second":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
          "123456789012"),
      {"tensor 'second'", "overlap tensor 'first'"});
  ExpectRejected(
      "same_bytes",
      FileBytes(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                R"("y":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                "1234"),
      {"overlap"});
}

TEST_F(SafetensorsTest, RejectsGapsAndTrailingBytes) {
  ExpectRejected(
      "gap",
      FileBytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                "12345678"),
      {"tensor 'w'", "gap"});
  ExpectRejected(
      "trailing",
      FileBytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                "12345678"),
      {"4 trailing bytes"});
}

TEST_F(SafetensorsTest, RejectsDuplicateKeys) {
  ExpectRejected(
      "duplicate_tensor",
      FileBytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                "12345678"),
      {"duplicate key 'w' at the top level"});
  ExpectRejected("duplicate_field",
                 FileBytes(R"({"w":{"dtype":"F32","dtype":"F16","shape":[1],)"
                           R"("data_offsets":[0,4]}})",
                           "1234"),
                 {"duplicate key 'dtype' in 'w'"});
}

TEST_F(SafetensorsTest, RejectsMissingAndUnknownEntryFields) {
  ExpectRejected(
      "no_shape",
      FileBytes(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", "1234"),
      {"tensor 'w'", "missing field \"shape\""});
  ExpectRejected(
      "extra_field",
      FileBytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],)"
                R"("stride":[1]}})",
                "1234"),
      {"tensor 'w'", "unknown field 'stride'"});
}

TEST_F(SafetensorsTest, ReadsMetadataAndRejectsNonStringValues) {
  const std::string path = Write(
      "metadata", FileBytes(R"({"__metadata__":{"format":"pt","v":"2"}})", ""));
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->metadata().at("format"), "pt");
  EXPECT_EQ((*file)->num_tensors(), 0u);
  ExpectRejected("bad_metadata",
                 FileBytes(R"({"__metadata__":{"epoch":3}})", ""),
                 {"\"__metadata__\" value 'epoch' must be a string"});
}

TEST_F(SafetensorsTest, RejectsDeepNesting) {
  const std::string deep = std::string(100, '[') + std::string(100, ']');
  ExpectRejected("deep", FileBytes(R"({"__metadata__":)" + deep + "}", ""),
                 {"nested deeper than"});
}

TEST_F(SafetensorsTest, EscapesHostileNamesInMessages) {
  ExpectRejected(
      "hostile_name",
      FileBytes("{\"bad\\u0001\\n\":{\"dtype\":\"C64\",\"shape\":[1],"
                "\"data_offsets\":[0,8]}}",
                std::string(8, '\0')),
      {R"(tensor 'bad\x01\x0a')"});
}

// Random byte flips in the header and length field: whatever the result,
// Open must return (the ASan build checks that it reads nothing it should
// not).

}  // namespace
}  // namespace favor::model
