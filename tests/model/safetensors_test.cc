#include "server/model/safetensors.h"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::model {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// The 8-byte little-endian length field.
std::string LengthField(uint64_t length) {
  std::string field(8, '\0');
  for (int i = 0; i < 8; ++i) {
    field[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  }
  return field;
}

// A whole file: length field, header, data.
std::string FileBytes(const std::string& header, const std::string& data) {
  return LengthField(header.size()) + header + data;
}

// Each test writes its fixtures, byte by byte, into a fresh directory.
class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "safetensors_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

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
    EXPECT_THAT(std::string(file.status().message()), HasSubstr(path));
    for (const std::string& part : parts) {
      EXPECT_THAT(std::string(file.status().message()), HasSubstr(part));
    }
  }

  std::string dir_;
};

// A valid two-tensor file written by hand: "a" F32 [2] then "b" F16 [3].
const std::string kValidHeader =
    R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
    R"("b":{"dtype":"F16","shape":[3],"data_offsets":[8,14]}})";
const std::string kValidData = "AAAABBBBcccccc";

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

TEST_F(SafetensorsTest, RejectsFilesShorterThanTheLengthField) {
  ExpectRejected("empty", "", {"0 bytes", "8-byte header length"});
  ExpectRejected("seven", "1234567", {"7 bytes"});
}

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

TEST_F(SafetensorsTest, AcceptsPaddedHeaderAndEmptyFile) {
  const std::string path = Write("empty", FileBytes("{}      ", ""));
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->num_tensors(), 0u);
}

TEST_F(SafetensorsTest, RejectsUnsupportedDtypesByName) {
  for (const char* dtype : {"F64", "I64", "I32", "U8", "BOOL", "F8_E4M3"}) {
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
      FileBytes("{\"bad\\u0001\\n\":{\"dtype\":\"F64\",\"shape\":[1],"
                "\"data_offsets\":[0,8]}}",
                std::string(8, '\0')),
      {R"(tensor 'bad\x01\x0a')"});
}

// Random byte flips in the header and length field: whatever the result,
// Open must return (the ASan build checks that it reads nothing it should
// not).
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

// ---- Writer ----

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

// ---- CheckTensors ----

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
  EXPECT_THAT(message, HasSubstr("1 with the wrong shape: 'a.weight' "
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
