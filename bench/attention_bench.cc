// Attention kernels on the CPU: exact softmax against FAVOR+ (non-causal and
// causal) and FAVOR++ (non-causal) at growing lengths, 4 heads, d = 64, m =
// 256, batch 1, with an sgemm row as the machine's ceiling, measured in the
// same run; and FAVOR+ and FAVOR++ on bfloat16 Q, K, V. Prints the
// Google Benchmark table, then the targets of docs/performance.md as ratios.
//
//   build/bench/attention_bench [--benchmark_filter=...]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <utility>

#include "server/attention/attention.h"
#include "server/attention/cpu_allocator.h"
#include "server/attention/cpu_features.h"
#include "server/attention/cpu_gemm.h"
#include "server/attention/cpu_gemm_bf16.h"
#include "server/attention/parallelism.h"
#include "server/attention/projection.h"
#include "server/attention/torch_compat.h"
#include "server/common/multiversion.h"

#ifdef FAVOR_X86_TARGETS
#include <immintrin.h>
#endif

namespace favor::attention {
namespace {

constexpr int64_t kHeads = 4, kDim = 64, kFeatures = 256;

// FAVOR_BENCH_DEVICE=cuda runs the attention rows on the GPU (scripts/
// gpu-bench.sh); the default is the CPU.
c10::Device BenchDevice() {
  const char* device = std::getenv("FAVOR_BENCH_DEVICE");
  return c10::Device(device != nullptr ? device : "cpu");
}

// Waits for the device to finish (reading one element synchronises).
void Synchronize(const at::Tensor& t) {
  if (!t.device().is_cpu() && t.numel() > 0) {
    benchmark::DoNotOptimize(t.flatten()[0].item<float>());
  }
}

// Seconds per iteration of each benchmark, by name, for the summary.
std::map<std::string, double>& Timings() {
  static auto* timings = new std::map<std::string, double>();
  return *timings;
}

// Peak resident memory since the last reset, in bytes (Linux: writing 5 to
// clear_refs resets VmHWM).
void ResetPeakMemory() { std::ofstream("/proc/self/clear_refs") << "5"; }
double ResidentBytes(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) == 0)
      return std::stod(line.substr(strlen(field) + 1)) * 1024;
  }
  return 0;
}

// Back to single-threaded BLAS, as Favor runs it. OpenBLAS's worker threads
// keep spinning (sched_yield) for about 2^28 cycles after their last job,
// 0.1 s here: on a 2-core machine that spinning would steal a core from the
// next benchmark's first iterations. Wait until they sleep.
void SingleThreadedBlasAgain() {
  SetBlasThreads(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

void Sgemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  const at::Tensor a = at::randn({n, n}), b = at::randn({n, n});
  at::Tensor c = at::empty({n, n});
  SetBlasThreads(at::get_num_threads());  // BLAS at its best, all cores
  for (auto _ : state) at::mm_out(c, a, b);
  SingleThreadedBlasAgain();
  const double flops = 2.0 * n * n * n;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
}

// The machine's multi-threaded sgemm rate right now, in FLOP/s: the best of
// `repeats` 2048³ products with OpenBLAS on all threads.
double SgemmRateNow(int repeats) {
  const at::Tensor a = at::randn({2048, 2048}), b = at::randn({2048, 2048});
  at::Tensor c = at::empty({2048, 2048});
  SetBlasThreads(at::get_num_threads());
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    at::mm_out(c, a, b);
    best = std::min(best, std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count());
  }
  SingleThreadedBlasAgain();
  return 2.0 * 2048 * 2048 * 2048 / best;
}

// Random (1, kHeads, length, kDim) inputs on the bench device, in `dtype`
// (as a bfloat16 model's projections hand them over).
at::Tensor BenchInput(int64_t length, at::ScalarType dtype) {
  return at::randn({1, kHeads, length, kDim},
                   at::TensorOptions().device(BenchDevice()))
      .to(dtype);
}

void RunAttention(benchmark::State& state, Kernel kernel, bool causal,
                  at::ScalarType dtype = at::kFloat) {
  const int64_t length = state.range(0);
  at::manual_seed(0);
  const at::Tensor q = BenchInput(length, dtype), k = BenchInput(length, dtype),
                   v = BenchInput(length, dtype);
  ProjectionOptions projection_options;
  projection_options.num_features = kFeatures;
  projection_options.head_dim = kDim;
  const at::Tensor w = *DrawProjection(projection_options);
  AttentionOptions options;
  options.kernel = kernel;
  options.causal = causal;
  const double baseline = ResidentBytes("VmRSS:");
  ResetPeakMemory();
  double fastest_seconds = 1e30;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    auto out = Attend(q, k, v, w, at::Tensor(), options);
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      return;
    }
    Synchronize(*out);
    benchmark::DoNotOptimize(out->data_ptr());
    fastest_seconds = std::min(
        fastest_seconds,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
  }
  // Output (one L×dv tensor per head) included; inputs excluded.
  state.counters["peak_MiB"] =
      (ResidentBytes("VmHWM:") - baseline) / (1024.0 * 1024.0);
  const double flops = 8.0 * kDim * kFeatures * length * kHeads;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
  state.counters["tokens/s"] =
      benchmark::Counter(length, benchmark::Counter::kIsIterationInvariantRate);
  // This run's rate over the sgemm rate measured right after it: the speed
  // of this machine drifts within minutes, so the ratio is taken from a
  // pair, not against one sgemm row measured at the start.
  if (BenchDevice().is_cpu()) {
    state.counters["x_sgemm"] = flops / fastest_seconds / SgemmRateNow(3);
  }
}

// PyTorch's own fused attention (FlashAttention on recent GPUs, in bfloat16
// or float16), the reference for exact attention on a GPU; LibTorch 2.x
// only, so registered at run time where it exists.
void Sdpa(benchmark::State& state, at::ScalarType dtype) {
  const int64_t length = state.range(0);
  const auto opts = at::TensorOptions().device(BenchDevice()).dtype(dtype);
  const at::Tensor q = at::randn({1, kHeads, length, kDim}, opts);
  for (auto _ : state) {
    const at::Tensor out = *torch_compat::ScaledDotProductAttention(q, q, q);
    Synchronize(out);
  }
  state.counters["tokens/s"] =
      benchmark::Counter(length, benchmark::Counter::kIsIterationInvariantRate);
}
[[maybe_unused]] const bool kSdpaRegistered = [] {
  if (!torch_compat::kHasScaledDotProductAttention) return false;
  for (const auto& [name, dtype] :
       {std::pair{"Sdpa", at::kFloat}, std::pair{"SdpaBF16", at::kBFloat16}}) {
    benchmark::RegisterBenchmark(name, Sdpa, dtype)
        ->Arg(1 << 12)
        ->Arg(1 << 14)
        ->Arg(1 << 16)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  return true;
}();

void Exact(benchmark::State& state) {
  RunAttention(state, Kernel::kSoftmaxExact, false);
}
void Favor(benchmark::State& state) {
  RunAttention(state, Kernel::kFavorPositive, false);
}
void FavorCausal(benchmark::State& state) {
  RunAttention(state, Kernel::kFavorPositive, true);
}
void FavorPlusPlus(benchmark::State& state) {
  RunAttention(state, Kernel::kFavorPlusPlus, false);
}
// bfloat16 Q, K, V: the fused path's products on cpu::GemmBF16 where the
// CPU has AVX512-BF16 (else LibTorch's path, as the start-up line says).
void FavorBF16(benchmark::State& state) {
  RunAttention(state, Kernel::kFavorPositive, false, at::kBFloat16);
}
void FavorPlusPlusBF16(benchmark::State& state) {
  RunAttention(state, Kernel::kFavorPlusPlus, false, at::kBFloat16);
}

// FAVOR+'s four products alone on one core, over 16k tokens of one head in
// steps of `step` tokens: u = x·Wᵀ and S += uᵀ·v (key pass), u = x·Wᵀ and
// n = u·S (query pass), 8·d·m FLOP per token as the Favor rows count them.
// Arg 0: one-thread sgemm 2048³, the core's BLAS ceiling; Products/512: on
// the BLAS in 512-token steps (the path without AVX-512); ProductsGemm/64:
// on cpu::Gemm in 64-token steps (the path with it).
void SgemmOneThread(benchmark::State& state) {
  const int64_t n = state.range(0);
  const at::Tensor a = at::randn({n, n}), b = at::randn({n, n});
  at::Tensor c = at::empty({n, n});
  for (auto _ : state) at::mm_out(c, a, b);
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate,
      benchmark::Counter::kIs1000);
}

void RunProducts(benchmark::State& state, bool gemm) {
  const int64_t step = state.range(0), tokens = 1 << 14;
  if (gemm && !cpu::GemmIsFast()) {
    state.SkipWithError("no register-tile Gemm on this CPU (or --cpu_gemm=0)");
    return;
  }
  at::manual_seed(0);
  const at::Tensor x = at::randn({tokens, kDim}), v = at::randn({tokens, kDim});
  const at::Tensor wt = at::randn({kDim, kFeatures}) * 0.1;
  at::Tensor u = at::empty({step, kFeatures}), n = at::empty({step, kDim});
  at::Tensor sums = at::zeros({kFeatures, kDim});
  float* const up = u.data_ptr<float>();
  const float* const w = wt.data_ptr<float>();
  for (auto _ : state) {
    for (int64_t start = 0; start < tokens; start += step) {
      const float* const xs = x.data_ptr<float>() + start * kDim;
      const float* const vs = v.data_ptr<float>() + start * kDim;
      if (gemm) {
        cpu::Gemm(step, kFeatures, kDim, {xs, kDim, 1}, w, kFeatures, up,
                  kFeatures, false);
        cpu::Gemm(kFeatures, kDim, step, {up, 1, kFeatures}, vs, kDim,
                  sums.data_ptr<float>(), kDim, true);
        cpu::Gemm(step, kFeatures, kDim, {xs, kDim, 1}, w, kFeatures, up,
                  kFeatures, false);
        cpu::Gemm(step, kDim, kFeatures, {up, kFeatures, 1},
                  sums.data_ptr<float>(), kDim, n.data_ptr<float>(), kDim,
                  false);
      } else {
        const at::Tensor x_step = x.narrow(0, start, step);
        at::mm_out(u, x_step, wt);
        sums.addmm_(u.t(), v.narrow(0, start, step));
        at::mm_out(u, x_step, wt);
        at::mm_out(n, u, sums);
      }
    }
    benchmark::DoNotOptimize(n.data_ptr());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(8.0 * kDim * kFeatures * tokens,
                         benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
}
void Products(benchmark::State& state) { RunProducts(state, false); }
void ProductsGemm(benchmark::State& state) { RunProducts(state, true); }

// The core's arithmetic ceiling: twelve independent chains of fused
// multiply-adds on the widest vectors the CPU has (8 lanes with AVX2, 16
// with AVX-512), no loads or stores: what a register tile's inner loop
// would reach if feeding it cost nothing. One thread. LinearPackedGemm's
// rate over this one is how much of the core the tiles use. (noipa: else
// GCC finds the chains pure and runs them once for all iterations.)
constexpr int kFmaChains = 12;
constexpr int64_t kFmaSteps = int64_t{1} << 22;
int fma_lanes = 0;  // FmaPeak's vector width, for the summary
#ifdef FAVOR_X86_TARGETS
__attribute__((target("avx2,fma"), noipa)) float FmaChainsAvx2(int64_t steps) {
  __m256 acc[kFmaChains];
  for (int i = 0; i < kFmaChains; ++i) acc[i] = _mm256_set1_ps(i);
  const __m256 scale = _mm256_set1_ps(0.999999f), add = _mm256_set1_ps(1e-6f);
  for (int64_t k = 0; k < steps; ++k) {
#pragma GCC unroll 12
    for (int i = 0; i < kFmaChains; ++i) {
      acc[i] = _mm256_fmadd_ps(acc[i], scale, add);
    }
  }
  for (int i = 1; i < kFmaChains; ++i) acc[0] = _mm256_add_ps(acc[0], acc[i]);
  return _mm256_cvtss_f32(acc[0]);
}

__attribute__((target("avx512f"), noipa)) float FmaChainsAvx512(int64_t steps) {
  __m512 acc[kFmaChains];
  for (int i = 0; i < kFmaChains; ++i) acc[i] = _mm512_set1_ps(i);
  const __m512 scale = _mm512_set1_ps(0.999999f), add = _mm512_set1_ps(1e-6f);
  for (int64_t k = 0; k < steps; ++k) {
#pragma GCC unroll 12
    for (int i = 0; i < kFmaChains; ++i) {
      acc[i] = _mm512_fmadd_ps(acc[i], scale, add);
    }
  }
  for (int i = 1; i < kFmaChains; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, acc[0]);
  return lanes[0];
}
#endif

void FmaPeak(benchmark::State& state) {
  const int64_t steps = kFmaSteps;
  int lanes = 0;
#ifdef FAVOR_X86_TARGETS
  const cpu::CpuFeatures features = cpu::DetectedCpuFeatures();
  lanes = features.avx512f ? 16 : features.avx2 && features.fma ? 8 : 0;
#endif
  if (lanes == 0) {
    state.SkipWithError("no AVX2 with FMA on this CPU");
    return;
  }
  for (auto _ : state) {
#ifdef FAVOR_X86_TARGETS
    benchmark::DoNotOptimize(lanes == 16 ? FmaChainsAvx512(steps)
                                         : FmaChainsAvx2(steps));
#endif
  }
  fma_lanes = lanes;
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * lanes * kFmaChains * steps,
                         benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
}

// The encoder's linear layers on one core, as its row blocks run them:
// kLinearBlocks blocks of kLinearRows rows × `in` features times an (in ×
// out) weight plus its bias, on the BLAS (LibTorch's addmm: OpenBLAS packs
// the weight again for every block) or on cpu::Gemm (LinearGemm; what
// model/layers.cc runs where the CPU has its tiles). Args: in, out (the
// default model's QKV 256→768, feed-forward 256→1024 and 1024→256).
constexpr int64_t kLinearRows = 256, kLinearBlocks = 16;

// How a linear layer's product runs: the BLAS, cpu::Gemm reading the
// weight in place, or cpu::Gemm on the weight packed once (what the model
// does, Linear::packed).
enum class LinearOn { kBlas, kGemm, kPackedGemm };

void RunLinear(benchmark::State& state, LinearOn on) {
  const int64_t in = state.range(0), out = state.range(1);
  const int64_t rows = kLinearRows, blocks = kLinearBlocks;
  if (on != LinearOn::kBlas && !cpu::GemmIsFast()) {
    state.SkipWithError("no register-tile Gemm on this CPU (or --cpu_gemm=0)");
    return;
  }
  at::manual_seed(0);
  const at::Tensor x = at::randn({blocks * rows, in});
  const at::Tensor wt = at::randn({in, out}) * 0.05, bias = at::randn({out});
  at::Tensor y = at::empty({rows, out});
  const cpu::GemmKernel kernel = cpu::ActiveGemmKernel();
  at::Tensor packed;
  if (on == LinearOn::kPackedGemm) {
    packed = at::empty({cpu::PackedBSize(in, out, kernel)}, at::kFloat);
    cpu::PackB(in, out, wt.data_ptr<float>(), out, kernel,
               packed.data_ptr<float>());
  }
  for (auto _ : state) {
    for (int64_t b = 0; b < blocks; ++b) {
      const at::Tensor xb = x.narrow(0, b * rows, rows);
      if (on == LinearOn::kPackedGemm) {
        cpu::GemmPackedB(rows, out, in, {xb.data_ptr<float>(), in, 1},
                         packed.data_ptr<float>(), kernel, y.data_ptr<float>(),
                         out, false, bias.data_ptr<float>());
      } else if (on == LinearOn::kGemm) {
        cpu::Gemm(rows, out, in, {xb.data_ptr<float>(), in, 1},
                  wt.data_ptr<float>(), out, y.data_ptr<float>(), out, false,
                  bias.data_ptr<float>());
      } else {
        at::addmm_out(y, bias, xb, wt);
      }
    }
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * blocks * rows * in * out,
                         benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
}
void Linear(benchmark::State& state) { RunLinear(state, LinearOn::kBlas); }
void LinearGemm(benchmark::State& state) { RunLinear(state, LinearOn::kGemm); }
void LinearPackedGemm(benchmark::State& state) {
  RunLinear(state, LinearOn::kPackedGemm);
}

// Whether a run failed or was skipped, so has no time: Google Benchmark 1.7
// (Debian 12) says so in Run::error_occurred, 1.8 and later (Debian 13) in
// Run::skipped. The overload for the member that exists is chosen.
template <typename BenchmarkRun>
auto RunHasNoTime(const BenchmarkRun& run, int)
    -> decltype(bool{run.error_occurred}) {
  return run.error_occurred;
}
template <typename BenchmarkRun>
bool RunHasNoTime(const BenchmarkRun& run, long) {
  return static_cast<unsigned>(run.skipped) != 0;
}

// Remembers each benchmark's seconds per iteration for the summary: the
// "min" aggregate when --benchmark_repetitions is given (interference from
// other processes only ever adds time, so the fastest repetition is the
// best estimate of what the machine does), else the single run.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (RunHasNoTime(run, 0)) continue;
      const bool min =
          run.run_type == Run::RT_Aggregate && run.aggregate_name == "min";
      const bool max =
          run.run_type == Run::RT_Aggregate && run.aggregate_name == "max";
      // The paired ratio: the best repetition's.
      const auto paired = run.counters.find("x_sgemm");
      if ((max || run.run_type != Run::RT_Aggregate) &&
          paired != run.counters.end()) {
        double& best = Timings()[run.run_name.str() + ":x_sgemm"];
        best = std::max(best, paired->second.value);
      }
      if (run.run_type == Run::RT_Aggregate && !min) continue;
      const std::string name = run.run_name.str();
      if (!min && Timings().count(name + "#min") > 0) continue;
      Timings()[name] = run.GetAdjustedRealTime() /
                        benchmark::GetTimeUnitMultiplier(run.time_unit);
      if (min) Timings()[name + "#min"] = 1;
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

double MinOf(const std::vector<double>& values) {
  return values.empty() ? 0.0 : *std::min_element(values.begin(), values.end());
}

double MaxOf(const std::vector<double>& values) {
  return values.empty() ? 0.0 : *std::max_element(values.begin(), values.end());
}

// Floating-point operations per iteration, from the benchmark's name.
double Flops(const std::string& name) {
  const size_t slash = name.find('/');
  const double n = std::stod(name.substr(slash + 1));
  if (name.rfind("Sgemm/", 0) == 0) return 2.0 * n * n * n;
  return 8.0 * kDim * kFeatures * n * kHeads;
}

// Every row: milliseconds of wall time, and a "min" aggregate over
// repetitions for the summary.
benchmark::internal::Benchmark* Configure(benchmark::internal::Benchmark* b) {
  return b->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->ComputeStatistics("min", MinOf)
      ->ComputeStatistics("max", MaxOf);
}

BENCHMARK(Sgemm)->Apply([](auto* b) { Configure(b)->Arg(2048); });
BENCHMARK(SgemmOneThread)->Apply([](auto* b) { Configure(b)->Arg(2048); });
BENCHMARK(Products)->Apply([](auto* b) { Configure(b)->Arg(64)->Arg(512); });
BENCHMARK(ProductsGemm)->Apply([](auto* b) { Configure(b)->Arg(64)->Arg(512); });
BENCHMARK(Linear)->Apply([](auto* b) {
  Configure(b)->Args({256, 768})->Args({256, 1024})->Args({1024, 256});
});
BENCHMARK(LinearGemm)->Apply([](auto* b) {
  Configure(b)->Args({256, 768})->Args({256, 1024})->Args({1024, 256});
});
BENCHMARK(FmaPeak)->Apply([](auto* b) { Configure(b); });
BENCHMARK(LinearPackedGemm)->Apply([](auto* b) {
  Configure(b)->Args({256, 768})->Args({256, 1024})->Args({1024, 256});
});
// Exact attention fits in memory at any length (it works in tiles), but its
// time is quadratic: 64k tokens take about a minute here and 1M would take
// hours, so it stops at 64k.
BENCHMARK(Exact)->Apply([](auto* b) {
  Configure(b)->RangeMultiplier(4)->Range(1 << 10, 1 << 16);
});
BENCHMARK(Favor)->Apply([](auto* b) {
  Configure(b)->RangeMultiplier(4)->Range(1 << 10, 1 << 16)->Arg(1 << 20);
});
BENCHMARK(FavorCausal)->Apply([](auto* b) {
  Configure(b)->RangeMultiplier(4)->Range(1 << 10, 1 << 16)->Arg(1 << 20);
});
// FAVOR++ is FAVOR+ plus a statistics pass over Q and K and one more
// multiply-add per feature; its rows sit beside FAVOR+'s for the ratio.
BENCHMARK(FavorPlusPlus)->Apply([](auto* b) {
  Configure(b)->RangeMultiplier(4)->Range(1 << 10, 1 << 16);
});
BENCHMARK(FavorBF16)->Apply([](auto* b) {
  Configure(b)->RangeMultiplier(4)->Range(1 << 10, 1 << 16);
});
BENCHMARK(FavorPlusPlusBF16)->Apply([](auto* b) {
  Configure(b)->Arg(1 << 14);
});

void PrintTargets() {
  const auto seconds = [](const std::string& name) {
    auto it = Timings().find(name + "/real_time");
    return it == Timings().end() ? 0.0 : it->second;
  };
  const auto rate = [&](const std::string& name) {
    const double t = seconds(name);
    return t > 0 ? Flops(name) / t : 0.0;
  };
  const auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  if (Timings().empty()) return;  // nothing ran (a filter, or a listing)
  std::printf("\nTargets (ratios from this run, fastest repetition):\n");
  std::printf("%-44s %10s %11s\n", "target", "measured", "bound");
  const auto row = [](const std::string& what, double value, double bound,
                      bool at_least) {
    // 0: a benchmark the ratio needs did not run (filtered out).
    if (value <= 0) {
      std::printf("%-44s %10s %s%9.3f\n", what.c_str(), "not run",
                  at_least ? ">=" : "<=", bound);
      return;
    }
    const bool ok = at_least ? value >= bound : value <= bound;
    std::printf("%-44s %10.3f %s%9.3f %s\n", what.c_str(), value,
                at_least ? ">=" : "<=", bound, ok ? "ok" : "MISSED");
  };
  const double sgemm = rate("Sgemm/2048");
  for (const char* length : {"4096", "16384", "65536", "1048576"}) {
    const std::string name = std::string("Favor/") + length;
    row("FAVOR+ L=" + std::string(length) + " / sgemm rate (start of run)",
        ratio(rate(name), sgemm), 0.60, true);
    const auto paired = Timings().find(name + "/real_time:x_sgemm");
    row("FAVOR+ L=" + std::string(length) + " / sgemm rate (paired)",
        paired == Timings().end() ? 0.0 : paired->second, 0.60, true);
  }
  // How much of one core the packed tiles use (no bound: the ceiling).
  const double peak = seconds("FmaPeak");
  if (peak > 0 && fma_lanes > 0) {
    const double peak_rate = 2.0 * fma_lanes * kFmaChains * kFmaSteps / peak;
    std::printf("%-44s", "packed tiles / one core's FMA peak");
    for (const auto& [in, out] :
         {std::pair{256, 768}, std::pair{256, 1024}, std::pair{1024, 256}}) {
      const double t = seconds("LinearPackedGemm/" + std::to_string(in) + "/" +
                               std::to_string(out));
      if (t > 0) {
        std::printf(
            " %dx%d %.2f", in, out,
            2.0 * kLinearBlocks * kLinearRows * in * out / t / peak_rate);
      }
    }
    std::printf("\n");
  }
  row("exact / FAVOR+ time at L=16384",
      ratio(seconds("Exact/16384"), seconds("Favor/16384")), 20, true);
  row("FAVOR+ t(64k) / t(16k)",
      ratio(seconds("Favor/65536"), seconds("Favor/16384")), 4.4, false);
  row("causal FAVOR+ t(64k) / t(16k)",
      ratio(seconds("FavorCausal/65536"), seconds("FavorCausal/16384")), 4.4,
      false);
  row("FAVOR++ / FAVOR+ time at L=16384",
      ratio(seconds("FavorPlusPlus/16384"), seconds("Favor/16384")), 1.10,
      false);
  // Issue 14: bfloat16 FAVOR+ at least 1.6× float32's speed.
  row("FAVOR+ bf16 / fp32 time at L=16384",
      ratio(seconds("FavorBF16/16384"), seconds("Favor/16384")), 1 / 1.6,
      false);
}

}  // namespace
}  // namespace favor::attention

int main(int argc, char** argv) {
  // --threads=N (default: one per core), --huge_pages=0 (default 1, as
  // favor-server) and --cpu_gemm=0 (default 1: FAVOR+'s products on its own
  // AVX-512 kernel where the CPU has it, else on the BLAS) are ours; the
  // rest is Google Benchmark's.
  favor::attention::CpuParallelismOptions parallelism;
  bool huge_pages = true;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--threads=", 0) == 0) {
      parallelism.num_threads = std::atoi(arg.c_str() + 10);
    } else if (arg.rfind("--huge_pages=", 0) == 0) {
      huge_pages = std::atoi(arg.c_str() + 13) != 0;
    } else if (arg.rfind("--cpu_gemm=", 0) == 0) {
      favor::attention::cpu::SetFastGemmEnabled(std::atoi(arg.c_str() + 11) !=
                                                0);
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  const int threads = favor::attention::ConfigureCpuParallelism(parallelism);
  if (huge_pages) {
    huge_pages = favor::attention::InstallHugePageCpuAllocator() ==
                 favor::attention::HugePageAllocatorState::kInstalled;
  }
  std::printf(
      "threads: %d, large tensors on huge pages: %s, FAVOR+ products on: %s, "
      "in bfloat16: %s\n",
      threads, huge_pages ? "yes" : "no",
      favor::attention::cpu::GemmIsFast()
          ? favor::attention::cpu::GemmKernelName(
                favor::attention::cpu::ActiveGemmKernel())
          : "BLAS",
      favor::attention::cpu::GemmBF16IsFast() ? "AVX512-BF16 kernel"
                                              : "LibTorch");
  benchmark::Initialize(&argc, argv);
  favor::attention::SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  favor::attention::PrintTargets();
  benchmark::Shutdown();
  return 0;
}
