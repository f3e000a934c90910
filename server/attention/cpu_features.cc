#include "server/attention/cpu_features.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#define FAVOR_HAVE_CPUID 1
#endif

namespace favor::attention::cpu {
namespace {

#ifdef FAVOR_HAVE_CPUID
bool Bit(unsigned value, int bit) { return ((value >> bit) & 1u) != 0; }

// XCR0: which register states the operating system saves on a context
// switch. An instruction set whose registers it does not save is unusable
// even when CPUID lists it.
uint64_t EnabledRegisterStates() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !Bit(ecx, 27)) return 0;
  uint32_t low = 0, high = 0;
  __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return (uint64_t{high} << 32) | low;
}

CpuFeatures Detect() {
  CpuFeatures features;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return features;
  const unsigned max_subleaf = eax;
  const uint64_t states = EnabledRegisterStates();
  // SSE, AVX, opmask, the upper halves of zmm0-15 and zmm16-31.
  const bool os_avx512 = (states & 0xE6) == 0xE6;
  const bool os_amx = (states & (uint64_t{3} << 17)) == (uint64_t{3} << 17);
  // SSE and AVX (the lower and upper halves of ymm0-15).
  const bool os_avx = (states & 0x6) == 0x6;
  features.avx2 = os_avx && Bit(ebx, 5);
  unsigned eax1 = 0, ebx1 = 0, ecx1 = 0, edx1 = 0;
  features.fma =
      os_avx && __get_cpuid(1, &eax1, &ebx1, &ecx1, &edx1) && Bit(ecx1, 12);
  features.avx512f = os_avx512 && Bit(ebx, 16);
  features.avx512bw = os_avx512 && Bit(ebx, 30);
  features.avx512vl = os_avx512 && Bit(ebx, 31);
  features.avx512_vnni = os_avx512 && Bit(ecx, 11);
  features.amx_bf16 = os_amx && Bit(edx, 22);
  if (max_subleaf >= 1 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) {
    features.avx512_bf16 = os_avx512 && Bit(eax, 5);
  }
  return features;
}
#else
CpuFeatures Detect() { return {}; }
#endif

struct Override {
  absl::Mutex mutex;
  std::optional<CpuFeatures> features ABSL_GUARDED_BY(mutex);
};

Override& TheOverride() {
  static auto* override_state = new Override();
  return *override_state;
}

}  // namespace

CpuFeatures CurrentCpuFeatures() {
  {
    Override& state = TheOverride();
    absl::MutexLock lock(&state.mutex);
    if (state.features.has_value()) return *state.features;
  }
  return DetectedCpuFeatures();
}

absl::StatusOr<CpuFeatures> CapToIsa(CpuFeatures features,
                                     absl::string_view isa) {
  if (isa.empty() || isa == "native") return features;
  if (isa != "avx2" && isa != "baseline") {
    return absl::InvalidArgumentError(absl::StrCat(
        "FAVOR_CPU_ISA is native, avx2 or baseline, not '", isa, "'"));
  }
  CpuFeatures capped;
  if (isa == "avx2") {
    capped.avx2 = features.avx2;
    capped.fma = features.fma;
  }
  return capped;
}

CpuFeatures DetectedCpuFeatures() {
  static const CpuFeatures detected = [] {
    const char* isa = std::getenv("FAVOR_CPU_ISA");
    absl::StatusOr<CpuFeatures> capped =
        CapToIsa(Detect(), isa != nullptr ? isa : "");
    // A typo must not pass for a cap: the variable names what to measure.
    if (!capped.ok()) {
      std::fprintf(stderr, "%s\n",
                   std::string(capped.status().message()).c_str());
      std::abort();
    }
    return *capped;
  }();
  return detected;
}

void SetCpuFeaturesForTesting(std::optional<CpuFeatures> features) {
  Override& state = TheOverride();
  absl::MutexLock lock(&state.mutex);
  state.features = features;
}

bool HasFastBFloat16(const CpuFeatures& features) {
  const bool avx512 =
      features.avx512f && features.avx512bw && features.avx512vl;
  return (avx512 && features.avx512_bf16) || features.amx_bf16;
}

absl::Status CheckBFloat16Support() {
  const CpuFeatures features = CurrentCpuFeatures();
  if (HasFastBFloat16(features)) return absl::OkStatus();
  std::vector<std::string> missing;
  const std::pair<bool, const char*> sets[] = {
      {features.avx512_bf16, "AVX512-BF16"}, {features.avx512f, "AVX512F"},
      {features.avx512bw, "AVX512BW"},       {features.avx512vl, "AVX512VL"},
      {features.amx_bf16, "AMX-BF16"},
  };
  for (const auto& [present, name] : sets) {
    if (!present) missing.push_back(name);
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "bfloat16 on the CPU needs AVX512-BF16 (with AVX512F, AVX512BW, "
      "AVX512VL) or AMX-BF16, and this CPU lacks ",
      absl::StrJoin(missing, ", "),
      "; without them bfloat16 would be emulated, slower than float32 "
      "(use --dtype=float32)"));
}

absl::Status CheckInt8Support() {
  if (CurrentCpuFeatures().avx2) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "int8 on the CPU needs AVX2, which this CPU lacks; without it int8 "
      "would run in plain loops, slower than float32 (use --dtype=float32)");
}

}  // namespace favor::attention::cpu
