// FolderRevision and FolderSignature (model_fingerprint.h), on folders
// written here: the revision follows the files' paths and bytes and nothing
// else; the signature follows what a stat sees.
#include "server/model/model_fingerprint.h"

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
  // A model-like folder: a config, 1 MiB + 3 bytes of weights (a partial
  // last word), a nested file.
  void WriteModel(const std::string& folder) {
    std::string weights(std::size_t{1} << 20, '\0');
    for (std::size_t i = 0; i < weights.size(); ++i) {
      weights[i] = static_cast<char>(i * 131 % 251);
    }
    Write(folder, "config.json", "{\"version\": \"v1\"}");
    Write(folder, "model.safetensors", weights + "xyz");
    Write(folder, "tokenizer/vocab.txt", "[PAD]\n[UNK]\n");
  }
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

TEST_F(ModelFingerprintTest, AnyChangedByteOrPathChangesTheRevision) {
  WriteModel("base");
  const std::string base = Revision("base");
  struct Change {
    const char* what;
    const char* file;
    std::string bytes;
  };
  std::string weights(std::size_t{1} << 20, '\0');
  for (std::size_t i = 0; i < weights.size(); ++i) {
    weights[i] = static_cast<char>(i * 131 % 251);
  }
  std::string middle = weights + "xyz";
  middle[500000] ^= 1;
  for (const Change& change :
       {Change{"a byte in the middle", "model.safetensors", middle},
        Change{"a byte of the partial last word", "model.safetensors",
               weights + "xyZ"},
        Change{"a zero byte appended", "model.safetensors",
               weights + std::string("xyz\0", 4)},
        Change{"the config", "config.json", "{\"version\": \"v2\"}"},
        Change{"a nested file", "tokenizer/vocab.txt", "[PAD]\n[UNK]\n[CLS]\n"},
        Change{"a new file", "README.md", "card"}}) {
    fs::remove_all(fs::path(dir_) / "changed");
    WriteModel("changed");
    Write("changed", change.file, change.bytes);
    EXPECT_NE(Revision("changed"), base) << change.what;
  }
  fs::remove_all(fs::path(dir_) / "changed");
  WriteModel("changed");
  fs::rename(fs::path(dir_) / "changed/config.json",
             fs::path(dir_) / "changed/config2.json");
  EXPECT_NE(Revision("changed"), base) << "a renamed file";
}

// Bytes moved from one file to the next are another revision: each file's
// length is part of it.
TEST_F(ModelFingerprintTest, BytesMovedAcrossFilesChangeTheRevision) {
  Write("a", "1", "abcdefgh12");
  Write("a", "2", "345");
  Write("b", "1", "abcdefgh");
  Write("b", "2", "12345");
  EXPECT_NE(Revision("a"), Revision("b"));
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
  EXPECT_NE(Signature("a").find("config.json 17 "), std::string::npos)
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
