#include "server/attention/cpu_features.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
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
  const char* isa = std::getenv("FAVOR_CPU_ISA");
  if (isa != nullptr && std::string(isa) != "native" && *isa != '\0') {
    GTEST_SKIP() << "FAVOR_CPU_ISA=" << isa << " caps the detection";
  }
  const CpuFeatures cpu = DetectedCpuFeatures();
  const auto listed = [&](const char* name) {
    return flags.find(std::string(" ") + name + " ") != std::string::npos;
  };
  EXPECT_EQ(cpu.avx2, listed("avx2"));
  EXPECT_EQ(cpu.fma, listed("fma"));
  EXPECT_EQ(cpu.avx512f, listed("avx512f"));
  EXPECT_EQ(cpu.avx512bw, listed("avx512bw"));
  EXPECT_EQ(cpu.avx512vl, listed("avx512vl"));
  EXPECT_EQ(cpu.avx512_bf16, listed("avx512_bf16"));
  EXPECT_EQ(cpu.avx512_vnni, listed("avx512_vnni"));
  EXPECT_EQ(cpu.amx_bf16, listed("amx_bf16"));
}

TEST(CpuFeaturesTest, TheIsaCapKeepsWhatAnAvx2OrBaselineCpuHas) {
  CpuFeatures sapphire_rapids;
  sapphire_rapids.avx2 = sapphire_rapids.fma = true;
  sapphire_rapids.avx512f = sapphire_rapids.avx512bw = true;
  sapphire_rapids.avx512vl = sapphire_rapids.avx512_bf16 = true;
  sapphire_rapids.amx_bf16 = sapphire_rapids.avx512_vnni = true;
  const absl::StatusOr<CpuFeatures> native = CapToIsa(sapphire_rapids, "");
  ASSERT_TRUE(native.ok());
  EXPECT_TRUE(native->avx512f && native->amx_bf16);
  const absl::StatusOr<CpuFeatures> avx2 = CapToIsa(sapphire_rapids, "avx2");
  ASSERT_TRUE(avx2.ok());
  EXPECT_TRUE(avx2->avx2 && avx2->fma);
  EXPECT_FALSE(avx2->avx512f || avx2->avx512bw || avx2->avx512vl ||
               avx2->avx512_bf16 || avx2->amx_bf16 || avx2->avx512_vnni);
  EXPECT_FALSE(HasFastBFloat16(*avx2));
  const absl::StatusOr<CpuFeatures> baseline =
      CapToIsa(sapphire_rapids, "baseline");
  ASSERT_TRUE(baseline.ok());
  EXPECT_FALSE(baseline->avx2 || baseline->fma || baseline->avx512f);
  // A cap never adds what the CPU lacks.
  EXPECT_FALSE(CapToIsa(CpuFeatures(), "avx2")->avx2);
  EXPECT_EQ(CapToIsa(sapphire_rapids, "avx-2").status().code(),
            absl::StatusCode::kInvalidArgument);
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
