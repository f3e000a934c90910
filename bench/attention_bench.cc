// Attention kernels on the CPU: exact softmax against FAVOR+ (non-causal and
// causal) at growing lengths, 4 heads, d = 64, m = 256, batch 1, with an
// sgemm row as the machine's ceiling, measured in the same run. Prints the
// Google Benchmark table, then the targets of docs/performance.md as ratios.
//
//   build/bench/attention_bench [--benchmark_filter=...]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>
#include <torch/version.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

#include "server/attention/attention.h"
#include "server/attention/parallelism.h"
#include "server/attention/projection.h"

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

void Sgemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  const at::Tensor a = at::randn({n, n}), b = at::randn({n, n});
  at::Tensor c = at::empty({n, n});
  SetBlasThreads(at::get_num_threads());  // BLAS at its best, all cores
  for (auto _ : state) at::mm_out(c, a, b);
  SetBlasThreads(1);
  const double flops = 2.0 * n * n * n;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
}

void RunAttention(benchmark::State& state, Kernel kernel, bool causal) {
  const int64_t length = state.range(0);
  at::manual_seed(0);
  const auto opts = at::TensorOptions().device(BenchDevice());
  const at::Tensor q = at::randn({1, kHeads, length, kDim}, opts);
  const at::Tensor k = at::randn({1, kHeads, length, kDim}, opts);
  const at::Tensor v = at::randn({1, kHeads, length, kDim}, opts);
  ProjectionOptions projection_options;
  projection_options.num_features = kFeatures;
  projection_options.head_dim = kDim;
  const at::Tensor w = *DrawProjection(projection_options);
  AttentionOptions options;
  options.kernel = kernel;
  options.causal = causal;
  const double baseline = ResidentBytes("VmRSS:");
  ResetPeakMemory();
  for (auto _ : state) {
    auto out = Attend(q, k, v, w, at::Tensor(), options);
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      return;
    }
    Synchronize(*out);
    benchmark::DoNotOptimize(out->data_ptr());
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
}

#if TORCH_VERSION_MAJOR >= 2
// PyTorch's own fused attention (FlashAttention on recent GPUs), the
// reference for exact attention on a GPU.
void Sdpa(benchmark::State& state) {
  const int64_t length = state.range(0);
  const auto opts = at::TensorOptions().device(BenchDevice());
  const at::Tensor q = at::randn({1, kHeads, length, kDim}, opts);
  for (auto _ : state) {
    const at::Tensor out = at::scaled_dot_product_attention(q, q, q);
    Synchronize(out);
  }
  state.counters["tokens/s"] =
      benchmark::Counter(length, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(Sdpa)
    ->Arg(1 << 12)
    ->Arg(1 << 14)
    ->Arg(1 << 16)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
#endif

void Exact(benchmark::State& state) {
  RunAttention(state, Kernel::kSoftmaxExact, false);
}
void Favor(benchmark::State& state) {
  RunAttention(state, Kernel::kFavorPositive, false);
}
void FavorCausal(benchmark::State& state) {
  RunAttention(state, Kernel::kFavorPositive, true);
}

BENCHMARK(Sgemm)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(Exact)
    ->Arg(1 << 10)
    ->Arg(1 << 12)
    ->Arg(1 << 14)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(Favor)
    ->Arg(1 << 10)
    ->Arg(1 << 12)
    ->Arg(1 << 14)
    ->Arg(1 << 16)
    ->Arg(1 << 20)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(FavorCausal)
    ->Arg(1 << 10)
    ->Arg(1 << 12)
    ->Arg(1 << 14)
    ->Arg(1 << 16)
    ->Arg(1 << 20)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Remembers each benchmark's time and rate for the summary: the median
// when --benchmark_repetitions is given, else the single run.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const bool median =
          run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (run.run_type == Run::RT_Aggregate && !median) continue;
      const std::string name = run.run_name.str();
      if (!median && Timings().count(name + ":median") > 0) continue;
      Timings()[name] = run.GetAdjustedRealTime() /
                        benchmark::GetTimeUnitMultiplier(run.time_unit);
      const auto rate = run.counters.find("GFLOP/s");
      if (rate != run.counters.end()) {
        Timings()[name + ":gflops"] = rate->second.value;
      }
      if (median) Timings()[name + ":median"] = 1;
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

void PrintTargets() {
  auto& t = Timings();
  const auto get = [&](const std::string& name) {
    auto it = t.find(name);
    return it == t.end() ? 0.0 : it->second;
  };
  const double sgemm = get("Sgemm/2048/real_time:gflops");
  std::printf("\nTargets (ratios from this run):\n");
  std::printf("%-44s %10s %10s %s\n", "target", "measured", "bound", "");
  const auto row = [](const char* what, double value, double bound,
                      bool at_least) {
    const bool ok = value > 0 && (at_least ? value >= bound : value <= bound);
    std::printf("%-44s %10.3f %s%9.3f %s\n", what, value,
                at_least ? ">=" : "<=", bound, ok ? "ok" : "MISSED");
  };
  for (const char* length : {"4096", "16384", "65536", "1048576"}) {
    const std::string name = std::string("Favor/") + length + "/real_time";
    const std::string label =
        std::string("FAVOR+ L=") + length + " / sgemm rate";
    if (sgemm > 0)
      row(label.c_str(), get(name + ":gflops") / sgemm, 0.60, true);
  }
  row("exact / FAVOR+ time at L=16384",
      get("Exact/16384/real_time") / get("Favor/16384/real_time"), 20, true);
  row("FAVOR+ t(64k) / t(16k)",
      get("Favor/65536/real_time") / get("Favor/16384/real_time"), 4.4, false);
  row("causal FAVOR+ t(64k) / t(16k)",
      get("FavorCausal/65536/real_time") / get("FavorCausal/16384/real_time"),
      4.4, false);
}

}  // namespace
}  // namespace favor::attention

int main(int argc, char** argv) {
  favor::attention::ConfigureCpuParallelism({});
  benchmark::Initialize(&argc, argv);
  favor::attention::SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  favor::attention::PrintTargets();
  benchmark::Shutdown();
  return 0;
}
