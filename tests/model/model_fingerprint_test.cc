// FolderRevision and FolderSignature (model_fingerprint.h), on folders
// written here: the revision follows the names and bytes of the files a load
// reads and nothing else; the signature follows what a stat sees.
#include "server/model/model_fingerprint.h"

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/model/temp_dir_test.h"

namespace favor::model {
namespace {

namespace fs = std::filesystem;

class ModelFingerprintTest : public TempDirTest {
 protected:
  // Writes `bytes` to folder/relative (folders made as needed).
  void Write(const std::string& folder, const std::string& relative,
             const std::string& bytes) {
    const fs::path path = fs::path(dir_) / folder / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
  }
  std::string Revision(const std::string& folder) {
    absl::StatusOr<std::string> revision =
        FolderRevision((fs::path(dir_) / folder).string());
    EXPECT_TRUE(revision.ok()) << revision.status();
    return revision.ok() ? *revision : "";
  }
  std::string Signature(const std::string& folder) {
    return FolderSignature((fs::path(dir_) / folder).string());
  }
  // A model-like folder: a config that names a tokenizer file, 1 MiB + 3
  // bytes of weights (a partial last word), the tokenizer file.
  void WriteModel(const std::string& folder) {
    Write(folder, "config.json", kConfig);
    Write(folder, "model.safetensors", Weights() + "xyz");
    Write(folder, "vocab.txt", "[PAD]\n[UNK]\n");
  }
  static std::string Weights() {
    std::string weights(std::size_t{1} << 20, '\0');
    for (std::size_t i = 0; i < weights.size(); ++i) {
      weights[i] = static_cast<char>(i * 131 % 251);
    }
    return weights;
  }
  static constexpr char kConfig[] =
      R"({"version": "v1", "tokenizer": {"file": "vocab.txt"}})";
};

TEST_F(ModelFingerprintTest, SameFilesGiveTheSameRevisionWhateverTheirTimes) {
  WriteModel("a");
  WriteModel("b");
  fs::last_write_time(fs::path(dir_) / "b/config.json",
                      fs::file_time_type::clock::now() - std::chrono::hours(5));
  const std::string revision = Revision("a");
  EXPECT_EQ(revision.size(), 16u);
  EXPECT_EQ(revision.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(Revision("b"), revision);
  EXPECT_NE(Signature("b"), Signature("a"));
}

TEST_F(ModelFingerprintTest, AnyChangedByteOfALoadedFileChangesTheRevision) {
  WriteModel("base");
  const std::string base = Revision("base");
  struct Change {
    const char* what;
    const char* file;
    std::string bytes;
  };
  const std::string weights = Weights();
  std::string middle = weights + "xyz";
  middle[500000] ^= 1;
  for (const Change& change :
       {Change{"a byte in the middle", "model.safetensors", middle},
        Change{"a byte of the partial last word", "model.safetensors",
               weights + "xyZ"},
        Change{"a zero byte appended", "model.safetensors",
               weights + std::string("xyz\0", 4)},
        Change{"the config", "config.json",
               R"({"version": "v2", "tokenizer": {"file": "vocab.txt"}})"},
        Change{"the tokenizer", "vocab.txt", "[PAD]\n[UNK]\n[CLS]\n"}}) {
    fs::remove_all(fs::path(dir_) / "changed");
    WriteModel("changed");
    Write("changed", change.file, change.bytes);
    EXPECT_NE(Revision("changed"), base) << change.what;
  }
  // The same tokenizer bytes under another name.
  fs::remove_all(fs::path(dir_) / "changed");
  WriteModel("changed");
  fs::rename(fs::path(dir_) / "changed/vocab.txt",
             fs::path(dir_) / "changed/vocab2.txt");
  Write("changed", "config.json",
        R"({"version": "v1", "tokenizer": {"file": "vocab2.txt"}})");
  const std::string renamed = Revision("changed");
  EXPECT_NE(renamed, base);
  // The file the config names gone: its name alone counts, and the load
  // says what is missing.
  fs::remove(fs::path(dir_) / "changed/vocab2.txt");
  EXPECT_NE(Revision("changed"), renamed);
}

// What the load does not read is not read here either: a model card, the
// other frameworks' weights a Hugging Face folder holds, even a named pipe
// that would block a read.
TEST_F(ModelFingerprintTest, FilesTheLoadDoesNotReadAreLeftOut) {
  WriteModel("a");
  const std::string revision = Revision("a"), signature = Signature("a");
  Write("a", "README.md", "card");
  Write("a", "onnx/model.onnx", "onnx");
  Write("a", "tokenizer.json", "{}");
  ASSERT_EQ(mkfifo((fs::path(dir_) / "a/pytorch_model.bin").c_str(), 0600), 0);
  EXPECT_EQ(Revision("a"), revision);
  EXPECT_NE(Signature("a"), signature);
  // Nor does a loaded file that is no regular file block.
  fs::remove(fs::path(dir_) / "a/vocab.txt");
  ASSERT_EQ(mkfifo((fs::path(dir_) / "a/vocab.txt").c_str(), 0600), 0);
  EXPECT_NE(Revision("a"), revision);
}

// Bytes moved from one file to the next are another revision: each file's
// length is part of it.
TEST_F(ModelFingerprintTest, BytesMovedAcrossFilesChangeTheRevision) {
  Write("a", "config.json", kConfig);
  Write("a", "model.safetensors", "abcdefgh12");
  Write("a", "vocab.txt", "345");
  Write("b", "config.json", kConfig);
  Write("b", "model.safetensors", "abcdefgh");
  Write("b", "vocab.txt", "12345");
  EXPECT_NE(Revision("a"), Revision("b"));
}

TEST_F(ModelFingerprintTest, TheConfigsErrorsAreTheRevisions) {
  Write("a", "model.safetensors", "weights");
  EXPECT_EQ(FolderRevision(dir_ + "/a").status().code(),
            absl::StatusCode::kNotFound);
  Write("a", "config.json", R"({"tokenizer": {"file": "../vocab.txt"}})");
  const absl::Status status = FolderRevision(dir_ + "/a").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("config.json"), std::string::npos)
      << status;
}

TEST_F(ModelFingerprintTest, HiddenFilesAndFoldersAreLeftOut) {
  WriteModel("a");
  const std::string revision = Revision("a"), signature = Signature("a");
  Write("a", ".lock", "1234");
  Write("a", ".git/objects/x", "blob");
  Write("a", "tokenizer/.swap", "tmp");
  EXPECT_EQ(Revision("a"), revision);
  EXPECT_EQ(Signature("a"), signature);
}

TEST_F(ModelFingerprintTest, SignatureFollowsSizesAndTimesRevisionBytes) {
  WriteModel("a");
  const std::string revision = Revision("a"), signature = Signature("a");
  const fs::path config = fs::path(dir_) / "a/config.json";
  fs::last_write_time(config, fs::last_write_time(config) +
                                  std::chrono::seconds(10));
  EXPECT_NE(Signature("a"), signature) << "touched";
  EXPECT_EQ(Revision("a"), revision) << "touched";
  EXPECT_NE(Signature("a").find("config.json 53 "), std::string::npos)
      << Signature("a");
}

TEST_F(ModelFingerprintTest, AFolderThatIsNotThereIsNotFound) {
  EXPECT_EQ(FolderRevision(dir_ + "/missing").status().code(),
            absl::StatusCode::kNotFound);
  Write("", "file", "x");
  EXPECT_EQ(FolderRevision(dir_ + "/file").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(FolderSignature(dir_ + "/missing"), "");
}

}  // namespace
}  // namespace favor::model
