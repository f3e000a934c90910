// memory_info.h on fixed texts and on files written here: MemTotal, the
// cgroup limits (v2 first, "max" and v1's "unlimited" meaning none), and
// the process's own status.
#include "server/common/memory_info.h"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace favor {
namespace {

constexpr char kMeminfo[] =
    "MemTotal:       16314412 kB\nMemFree:         1234 kB\n";

TEST(MemoryInfoTest, ParsesMemTotalAndStatusFieldsInBytes) {
  EXPECT_EQ(*ParseMemTotal(kMeminfo), int64_t{16314412} * 1024);
  EXPECT_FALSE(ParseMemTotal("MemFree: 12 kB\n").ok());
  EXPECT_FALSE(ParseMemTotal("MemTotal: lots\n").ok());
  const char status[] =
      "Name:\tfavor-server\nVmHWM:\t  345 kB\nVmRSS:\t 300 kB\n";
  EXPECT_EQ(*ParseStatusField(status, "VmHWM"), 345 * 1024);
  EXPECT_EQ(*ParseStatusField(status, "VmRSS"), 300 * 1024);
  EXPECT_FALSE(ParseStatusField(status, "VmSwap").ok());
}

TEST(MemoryInfoTest, ParsesCgroupLimits) {
  EXPECT_EQ(**ParseCgroupLimit("3221225472\n"), int64_t{3221225472});
  EXPECT_FALSE(ParseCgroupLimit("max\n")->has_value());
  EXPECT_FALSE(ParseCgroupLimit("9223372036854771712\n")->has_value());
  EXPECT_FALSE(ParseCgroupLimit("lots").ok());
}

class MemoryFilesTest : public ::testing::Test {
 protected:
  // One folder per process: ctest runs the cases side by side.
  MemoryFilesTest()
      : dir_(std::filesystem::temp_directory_path() /
             ("memory_info_test_" + std::to_string(getpid()))) {
    std::filesystem::create_directories(dir_);
    paths_.meminfo = Write("meminfo", kMeminfo);
    paths_.cgroup_v2_max = (dir_ / "absent_v2").string();
    paths_.cgroup_v1_limit = (dir_ / "absent_v1").string();
    paths_.status = Write("status", "VmRSS:\t2048 kB\n");
  }
  ~MemoryFilesTest() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  std::filesystem::path dir_;
  MemoryInfoPaths paths_;
};

TEST_F(MemoryFilesTest, TheSmallerOfTheMachineAndTheCgroupLimit) {
  const int64_t machine = int64_t{16314412} * 1024;
  EXPECT_EQ(*AvailableMemoryBytes(paths_), machine);  // no cgroup file
  paths_.cgroup_v1_limit = Write("v1", "1073741824\n");
  EXPECT_EQ(*AvailableMemoryBytes(paths_), int64_t{1} << 30);
  paths_.cgroup_v2_max = Write("v2", "max\n");  // v2 decides: no limit
  EXPECT_EQ(*AvailableMemoryBytes(paths_), machine);
  paths_.cgroup_v2_max = Write("v2", "536870912\n");
  EXPECT_EQ(*AvailableMemoryBytes(paths_), int64_t{1} << 29);
  paths_.meminfo = (dir_ / "absent").string();
  EXPECT_EQ(AvailableMemoryBytes(paths_).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(MemoryFilesTest, ReadsTheProcessStatus) {
  EXPECT_EQ(*ProcessMemoryBytes("VmRSS", paths_), 2048 * 1024);
  // And this process's own, from the real file.
  const absl::StatusOr<int64_t> rss = ProcessMemoryBytes("VmRSS");
  ASSERT_TRUE(rss.ok()) << rss.status();
  EXPECT_GT(*rss, 0);
  EXPECT_GT(*AvailableMemoryBytes(), 0);
}

// What a failed load leaves: 256 MB of small blocks freed around a few kept
// ones. free() alone keeps the pages between the kept blocks in VmRSS; the
// release hands them back.
TEST(ReleaseFreedHeapMemoryTest, FreedSmallBlocksLeaveTheResidentSet) {
  constexpr size_t kBlocks = size_t{1} << 21;
  constexpr size_t kBlockBytes = 112;  // 128 with malloc's header
  std::vector<char*> blocks(kBlocks);
  for (char*& block : blocks) {
    block = new char[kBlockBytes];
    std::memset(block, 1, kBlockBytes);
  }
  for (size_t i = 0; i < kBlocks; ++i) {
    if (i % 1024 != 0) delete[] blocks[i];
  }
  const absl::StatusOr<int64_t> freed = ProcessMemoryBytes("VmRSS");
  ReleaseFreedHeapMemory();
  const absl::StatusOr<int64_t> released = ProcessMemoryBytes("VmRSS");
  for (size_t i = 0; i < kBlocks; i += 1024) delete[] blocks[i];
  ASSERT_TRUE(freed.ok() && released.ok());
  EXPECT_GT(*freed - *released, int64_t{192} << 20)
      << "VmRSS " << *freed << " before the release, " << *released
      << " after";
}

}  // namespace
}  // namespace favor
