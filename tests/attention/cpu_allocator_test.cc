#include "server/attention/cpu_allocator.h"

#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace favor::attention {
namespace {

constexpr uintptr_t kHugePageBytes = uintptr_t{2} << 20;

// Installs the allocator once for the whole test binary (it is
// process-wide). Where the kernel's transparent huge pages are off the
// allocator installs nothing (LibTorch's own serves everything), so there is
// nothing to test: the tests say so and skip. The machines of this project
// have them ("madvise").
class CpuAllocatorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { state_ = InstallHugePageCpuAllocator({}); }
  void SetUp() override {
    if (state_ == HugePageAllocatorState::kUnavailable) {
      GTEST_SKIP() << "transparent huge pages are off on this machine "
                      "(/sys/kernel/mm/transparent_hugepage/enabled): the "
                      "allocator installs nothing";
    }
  }
  static inline HugePageAllocatorState state_ =
      HugePageAllocatorState::kUnavailable;
};

// The /proc/self/smaps entry of the mapping holding `address`: its header
// line, then its fields ("VmFlags: rd wr mr mw me ac hg ...").
std::string SmapsEntry(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t a = reinterpret_cast<uintptr_t>(address);
  std::string line, entry;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream header(line);
    if (header >> std::hex >> begin >> dash >> end && dash == '-' &&
        line.find(':') > line.find(' ')) {
      if (inside) return entry;
      inside = a >= begin && a < end;
    }
    if (inside) entry += line + "\n";
  }
  return entry;
}

TEST_F(CpuAllocatorTest, SecondInstallIsANoOp) {
  EXPECT_EQ(InstallHugePageCpuAllocator({}),
            HugePageAllocatorState::kAlreadyInstalled);
}

TEST_F(CpuAllocatorTest, LargeTensorsAreAlignedHugePageMappings) {
  const at::Tensor big = at::empty({16 << 20 >> 2}, at::kFloat);  // 16 MiB
  const uintptr_t address = reinterpret_cast<uintptr_t>(big.data_ptr());
  EXPECT_EQ(address % kHugePageBytes, 0u);
  const std::string entry = SmapsEntry(big.data_ptr());
  ASSERT_FALSE(entry.empty());
  // "hg": the mapping has MADV_HUGEPAGE.
  EXPECT_NE(entry.find("VmFlags:"), std::string::npos) << entry;
  EXPECT_NE(entry.substr(entry.find("VmFlags:")).find(" hg"), std::string::npos)
      << entry;
}

TEST_F(CpuAllocatorTest, LargeAndSmallTensorsComputeCorrectly) {
  for (const int64_t n : {int64_t{3}, int64_t{1} << 10, int64_t{3} << 20}) {
    const at::Tensor a = at::arange(n, at::kDouble);
    const at::Tensor b = a * 2 + 1;
    // Σ (2i + 1) for i < n is n².
    EXPECT_EQ(b.sum().item<double>(), static_cast<double>(n) * n) << n;
  }
}

TEST_F(CpuAllocatorTest, FreedMappingsAreReturned) {
  const auto mappings = [] {
    std::ifstream maps("/proc/self/maps");
    int count = 0;
    std::string line;
    while (std::getline(maps, line)) ++count;
    return count;
  };
  { const at::Tensor warm = at::ones({8 << 20 >> 2}, at::kFloat); }
  const int before = mappings();
  for (int i = 0; i < 50; ++i) {
    const at::Tensor t = at::ones({(8 << 20 >> 2) + i * 1024}, at::kFloat);
    ASSERT_EQ(t.sum().item<float>(), static_cast<float>(t.numel()));
  }
  EXPECT_LE(mappings(), before + 2);
}

TEST_F(CpuAllocatorTest, FreedBlocksAreReusedForSimilarSizes) {
  at::Tensor first = at::empty({16 << 20 >> 2}, at::kFloat);  // 16 MiB
  void* const address = first.data_ptr();
  first.reset();
  // 12 MiB fits the cached 16 MiB block (no more than twice its need).
  const at::Tensor second = at::empty({12 << 20 >> 2}, at::kFloat);
  EXPECT_EQ(second.data_ptr(), address);
  // 4 MiB would waste three quarters of any cached block: a new mapping.
  const at::Tensor third = at::empty({4 << 20 >> 2}, at::kFloat);
  EXPECT_NE(third.data_ptr(), address);
}

// Resident anonymous memory of this process, in MiB.
double ResidentMiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024;
  }
  return -1;
}

// The default bound is 256 MiB: of three freed 120 MiB blocks two stay
// cached (and resident), the third goes back to the kernel; releasing the
// cache returns the other two.
TEST_F(CpuAllocatorTest, TheCacheIsBoundedAndCanBeReleased) {
  ReleaseCachedHugePages();  // what earlier tests left
  const double before = ResidentMiB();
  {
    std::vector<at::Tensor> blocks;
    for (int i = 0; i < 3; ++i) {
      blocks.push_back(at::ones({120 << 20 >> 2}, at::kFloat));
    }
    EXPECT_GT(ResidentMiB() - before, 350);
  }
  const double cached = ResidentMiB() - before;
  EXPECT_GT(cached, 230);
  EXPECT_LT(cached, 260);
  EXPECT_EQ(ReleaseCachedHugePages(), int64_t{240} << 20);
  EXPECT_LT(ResidentMiB() - before, 20);
  EXPECT_EQ(ReleaseCachedHugePages(), 0);
}

TEST_F(CpuAllocatorTest, RawAllocationsOfBothKindsRoundTrip) {
  c10::Allocator* allocator = c10::GetCPUAllocator();
  for (const size_t n : {size_t{64}, size_t{8} << 20}) {
    void* p = allocator->raw_allocate(n);
    ASSERT_NE(p, nullptr);
    static_cast<char*>(p)[0] = 1;
    static_cast<char*>(p)[n - 1] = 2;
    allocator->raw_deallocate(p);
  }
}

}  // namespace
}  // namespace favor::attention
