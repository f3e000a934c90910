#include "server/attention/cpu_features.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace favor::attention::cpu {
namespace {

using ::testing::HasSubstr;

// The flags Linux lists for this CPU, to compare CPUID's answer with.
std::string CpuInfoFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) return line + " ";
  }
  return "";
}

TEST(CpuFeaturesTest, DetectionAgreesWithTheKernelsFlags) {
  const std::string flags = CpuInfoFlags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags";
  const CpuFeatures cpu = DetectedCpuFeatures();
  const auto listed = [&](const char* name) {
    return flags.find(std::string(" ") + name + " ") != std::string::npos;
  };
  EXPECT_EQ(cpu.avx512f, listed("avx512f"));
  EXPECT_EQ(cpu.avx512bw, listed("avx512bw"));
  EXPECT_EQ(cpu.avx512vl, listed("avx512vl"));
  EXPECT_EQ(cpu.avx512_bf16, listed("avx512_bf16"));
  EXPECT_EQ(cpu.avx512_vnni, listed("avx512_vnni"));
  EXPECT_EQ(cpu.amx_bf16, listed("amx_bf16"));
}

TEST(CpuFeaturesTest, BFloat16NeedsAvx512Bf16OrAmx) {
  CpuFeatures cpu;
  EXPECT_FALSE(HasFastBFloat16(cpu));
  cpu.avx512f = cpu.avx512bw = cpu.avx512vl = true;
  EXPECT_FALSE(HasFastBFloat16(cpu));  // AVX-512 alone: emulation
  cpu.avx512_bf16 = true;
  EXPECT_TRUE(HasFastBFloat16(cpu));
  cpu = {};
  cpu.amx_bf16 = true;
  EXPECT_TRUE(HasFastBFloat16(cpu));
}

TEST(CpuFeaturesTest, OverrideSimulatesAnotherCpuAndNamesWhatIsMissing) {
  CpuFeatures skylake;  // AVX-512 without BF16
  skylake.avx512f = skylake.avx512bw = skylake.avx512vl = true;
  SetCpuFeaturesForTesting(skylake);
  const absl::Status status = CheckBFloat16Support();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("this CPU lacks AVX512-BF16, AMX-BF16"));
  EXPECT_EQ(CurrentCpuFeatures().avx512_bf16, false);
  SetCpuFeaturesForTesting(std::nullopt);
  EXPECT_EQ(CurrentCpuFeatures().avx512_bf16,
            DetectedCpuFeatures().avx512_bf16);
  EXPECT_EQ(CheckBFloat16Support().ok(),
            HasFastBFloat16(DetectedCpuFeatures()));
}

}  // namespace
}  // namespace favor::attention::cpu
