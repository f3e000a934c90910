// The instruction sets of this CPU that Favor's own kernels choose by, read
// once from CPUID (and XGETBV: the operating system must save the registers
// too), with an override for tests that simulate another CPU.
//
// The environment variable FAVOR_CPU_ISA caps what is detected, so that an
// AVX-512 machine can run (and measure) what an AVX2 one runs: "avx2"
// clears AVX-512 and AMX, "baseline" AVX2 and FMA too; unset or "native"
// changes nothing. LibTorch, OpenBLAS and oneDNN have caps of their own
// (ATEN_CPU_CAPABILITY=avx2, OPENBLAS_CORETYPE=Haswell,
// ONEDNN_MAX_CPU_ISA=AVX2; docs/performance.md). The element-wise loops of
// cpu_kernels.h and model/row_kernels.h that the loader picks
// (target_clones) follow the CPU itself.
//
// bfloat16 is fast on the CPU only with AVX512-BF16 (`vdpbf16ps`, Zen 4,
// Cooper Lake and later) or AMX-BF16 (Sapphire Rapids): oneDNN, which
// LibTorch's bfloat16 products go through, emulates it elsewhere at a
// fraction of float32's speed. So `--dtype=bfloat16` refuses to start on
// such a CPU rather than silently run slower (CheckBFloat16Support).
//
// Torch-free; shared by server/attention (cpu_gemm_bf16) and server/model.
#ifndef FAVOR_SERVER_ATTENTION_CPU_FEATURES_H_
#define FAVOR_SERVER_ATTENTION_CPU_FEATURES_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace favor::attention::cpu {

struct CpuFeatures {
  // AVX2 with FMA: the 256-bit register tiles of cpu::Gemm.
  bool avx2 = false;
  bool fma = false;
  // AVX-512 Foundation, Byte/Word and Vector Length: the base that both
  // the AVX512-BF16 instructions and oneDNN's bfloat16 kernels build on.
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512_bf16 = false;  // vdpbf16ps, vcvtne2ps2bf16
  bool amx_bf16 = false;     // tdpbf16ps (tiles enabled by the OS)
  bool avx512_vnni = false;  // vpdpbusd: int8 products (fbgemm)
};

// What this CPU has (within FAVOR_CPU_ISA): kernels choose their
// instructions by it.
CpuFeatures DetectedCpuFeatures();

// `features` within `isa` (FAVOR_CPU_ISA's values); INVALID_ARGUMENT for
// another value.
absl::StatusOr<CpuFeatures> CapToIsa(CpuFeatures features,
                                     absl::string_view isa);

// DetectedCpuFeatures(), or the override when a test has set one: what
// start-up checks (CheckBFloat16Support) go by.
CpuFeatures CurrentCpuFeatures();

// For tests: makes CurrentCpuFeatures() return `features` until it is
// called with std::nullopt. Process-wide.
void SetCpuFeaturesForTesting(std::optional<CpuFeatures> features);

// True when bfloat16 products run natively: AVX512-BF16 on AVX-512 (F, BW,
// VL), or AMX-BF16.
bool HasFastBFloat16(const CpuFeatures& features);

// OK when HasFastBFloat16(CurrentCpuFeatures()); otherwise
// FAILED_PRECONDITION naming the missing instruction sets, e.g. "bfloat16
// on the CPU needs AVX512-BF16 (with AVX512F, AVX512BW, AVX512VL) or
// AMX-BF16; this CPU lacks AVX512-BF16 and AMX-BF16".
absl::Status CheckBFloat16Support();

// OK when CurrentCpuFeatures() has AVX2 (cpu::GemmInt8's tiles); otherwise
// FAILED_PRECONDITION: int8's plain loops are correct but slower than
// float32, so a CPU without AVX2 is refused rather than slowed.
absl::Status CheckInt8Support();

}  // namespace favor::attention::cpu

#endif  // FAVOR_SERVER_ATTENTION_CPU_FEATURES_H_
