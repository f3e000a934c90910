// Encoder throughput, in tokens per second, of the benchmark model:
// 4 layers, hidden 256, 4 heads (d = 64), feed-forward 1024, FAVOR+ with
// m = 256 random features, rotary positions; the same model with exact
// softmax attention beside it. Sequence lengths 512, 4k, 32k and 256k (one
// sequence per batch; exact attention up to 32k, past which its quadratic
// cost is minutes per pass), and a batch of 64 sequences of 128 tokens.
//
// The FAVOR+ model runs in float32 and, where the CPU has AVX512-BF16 or
// AMX-BF16, in bfloat16 ("favor+ bf16/...") in the same run.
//
// At the end it prints the ratios that docs/performance.md sets targets
// for: FAVOR+ tokens/s at 32k over 4k (linear: ≥ 0.75), FAVOR+ over exact
// at 32k (≥ 10), and bfloat16 over float32 at 512, 4k, 32k and 64 × 128
// (≥ 2), from the best of --benchmark_repetitions runs of each, by wall
// time and by CPU time (see Rates).
//
// With --device=cuda (scripts/gpu-bench.sh) the models run on the GPU, in
// float32 and bfloat16; int8 is a CPU path and is left out there.
//
//   build/bench/model_bench [--threads=N] [--cpu_block_tokens=N]
//       [--cpu_sub_batch_tokens=N] [--attention_chunk_tokens=N]
//       [--device=cpu|cuda] [--huge_pages=false] [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/attention/cpu_allocator.h"
#include "server/attention/cpu_features.h"
#include "server/attention/cpu_gemm.h"
#include "server/attention/cpu_gemm_int8.h"
#include "server/attention/parallelism.h"
#include "server/model/model.h"
#include "server/model/random_model.h"

namespace favor::model {
namespace {

using attention::Kernel;

ModelConfig BenchConfig(Kernel kernel) {
  ModelConfig config;
  config.num_hidden_layers = 4;
  config.hidden_size = 256;
  config.num_attention_heads = 4;
  config.intermediate_size = 1024;
  config.position_embedding_type = PositionEmbedding::kRotary;
  config.max_sequence_length = 1 << 20;
  config.attention.kernel = kernel;
  config.attention.num_random_features = 256;
  return config;
}

// ModelOptions from the command line (--cpu_block_tokens,
// --attention_chunk_tokens), to measure their effect.
ModelOptions& BenchOptions() {
  static ModelOptions options;
  return options;
}

// One model per kernel and dtype, written once into a temporary folder.
const Model& BenchModel(Kernel kernel, ComputeDType dtype) {
  static auto* models =
      new std::map<std::pair<Kernel, ComputeDType>, std::unique_ptr<Model>>();
  auto it = models->find({kernel, dtype});
  if (it != models->end()) return *it->second;
  const std::string dir =
      (std::filesystem::temp_directory_path() /
       absl::StrCat("favor_model_bench_", getpid(), "_",
                    kernel == Kernel::kSoftmaxExact ? "exact" : "favor"))
          .string();
  const absl::Status written = WriteRandomModel(BenchConfig(kernel), dir);
  ModelOptions options = BenchOptions();
  options.dtype = dtype;
  auto model = Model::Load(dir, options);
  std::filesystem::remove_all(dir);
  if (!written.ok() || !model.ok()) {
    std::fprintf(
        stderr, "model_bench: %s\n",
        std::string((written.ok() ? model.status() : written).message())
            .c_str());
    std::exit(1);
  }
  return *models->emplace(std::make_pair(kernel, dtype), *std::move(model))
              .first->second;
}

// Best tokens/s of each run, by name, for the ratios printed at the end:
// per second of wall time, and per second of CPU time of the whole process
// (all threads). On a shared machine the wall-time rate measures the
// neighbours too; the CPU-time rate, times the thread count, is what the
// cores would give if they were ours (run with OMP_WAIT_POLICY=passive, so
// that idle threads do not count their spinning).
struct Rates {
  double wall = 0;
  double cpu = 0;
};
std::map<std::string, Rates>& Results() {
  static auto* results = new std::map<std::string, Rates>();
  return *results;
}

double ProcessCpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * now.tv_nsec;
}

void Encode(benchmark::State& state, Kernel kernel, ComputeDType dtype,
            int64_t sequences, int64_t length, const std::string& name) {
  const Model& model = BenchModel(kernel, dtype);
  std::vector<int32_t> ids;
  std::vector<int64_t> offsets = {0};
  for (int64_t s = 0; s < sequences; ++s) {
    for (int64_t i = 0; i < length; ++i) {
      ids.push_back(static_cast<int32_t>((s * 7919 + i * 104729) % 30522));
    }
    offsets.push_back(static_cast<int64_t>(ids.size()));
  }
  double seconds = 0, cpu_seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = ProcessCpuSeconds();
    auto out = model.Embed(ids, offsets);
    cpu_seconds += ProcessCpuSeconds() - cpu_start;
    seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(out->values.data());
  }
  const double tokens = static_cast<double>(ids.size()) * state.iterations();
  state.counters["tokens/s"] =
      benchmark::Counter(tokens, benchmark::Counter::kIsRate);
  state.counters["tokens/cpu_s"] = tokens / cpu_seconds;
  Rates& best = Results()[name];
  best.wall = std::max(best.wall, tokens / seconds);
  best.cpu = std::max(best.cpu, tokens / cpu_seconds);
}

// "favor+/L=4096", "favor+ bf16/64x128", "favor+ int8/L=512", "exact/L=512".
std::string RowName(Kernel kernel, ComputeDType dtype, int64_t sequences,
                    int64_t length) {
  return absl::StrCat(kernel == Kernel::kSoftmaxExact ? "exact" : "favor+",
                      dtype == ComputeDType::kBFloat16 ? " bf16"
                      : dtype == ComputeDType::kInt8   ? " int8"
                                                       : "",
                      "/",
                      sequences == 1 ? absl::StrCat("L=", length)
                                     : absl::StrCat(sequences, "x", length));
}

void Register(Kernel kernel, ComputeDType dtype, int64_t sequences,
              int64_t length, int iterations) {
  const std::string name = RowName(kernel, dtype, sequences, length);
  auto* bench =
      benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
        Encode(state, kernel, dtype, sequences, length, name);
      });
  bench->Unit(benchmark::kMillisecond)->UseRealTime();
  if (iterations > 0) bench->Iterations(iterations);
}

void PrintRatio(const char* what, const std::string& numerator,
                const std::string& denominator, double target) {
  const auto& results = Results();
  if (results.count(numerator) == 0 || results.count(denominator) == 0) {
    return;
  }
  const Rates& top = results.at(numerator);
  const Rates& bottom = results.at(denominator);
  const double wall = top.wall / bottom.wall, cpu = top.cpu / bottom.cpu;
  std::printf("%-36s wall %6.2f, cpu %6.2f  (target >= %.2f: %s)\n", what, wall,
              cpu, target, std::max(wall, cpu) >= target ? "met" : "NOT met");
}

}  // namespace
}  // namespace favor::model

// Flags of this program, taken out of argv before Google Benchmark sees
// it: --threads=N (0: one per core), --cpu_block_tokens=N,
// --cpu_sub_batch_tokens=N (0: whole batches layer by layer),
// --attention_chunk_tokens=N, --gemm_kernel=portable|avx2|avx512 (the
// widest cpu::Gemm kernel used; portable: the products on the BLAS, as
// before the register-tile kernels ran them), --device=cpu|cuda and
// --huge_pages=false (LibTorch's own CPU allocator for large tensors).
bool& HugePages() {
  static bool huge_pages = true;
  return huge_pages;
}

int TakeOwnFlags(int& argc, char** argv) {
  int threads = 0;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--threads=", 0) == 0) {
      threads = std::atoi(arg.c_str() + 10);
    } else if (arg.rfind("--cpu_block_tokens=", 0) == 0) {
      favor::model::BenchOptions().cpu_block_tokens =
          std::atoll(arg.c_str() + 19);
    } else if (arg.rfind("--cpu_sub_batch_tokens=", 0) == 0) {
      favor::model::BenchOptions().cpu_sub_batch_tokens =
          std::atoll(arg.c_str() + 23);
    } else if (arg.rfind("--gemm_kernel=", 0) == 0) {
      const std::string name = arg.substr(14);
      using favor::attention::cpu::GemmKernel;
      favor::attention::cpu::LimitGemmKernel(
          name == "portable" ? GemmKernel::kPortable
          : name == "avx2"   ? GemmKernel::kAvx2
                             : GemmKernel::kAvx512);
    } else if (arg == "--huge_pages=false") {
      HugePages() = false;
    } else if (arg.rfind("--device=", 0) == 0) {
      favor::model::BenchOptions().device = arg.substr(9);
    } else if (arg.rfind("--attention_chunk_tokens=", 0) == 0) {
      favor::model::BenchOptions().attention_chunk_tokens =
          std::atoll(arg.c_str() + 25);
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  return threads;
}

namespace favor::model {
namespace {

// FAVOR+ in float32 and, where the CPU runs them natively, bfloat16 and
// int8 right after at each size (so that a pair's ratio is taken within
// seconds), then exact attention in float32.
void RegisterAll(bool bfloat16, bool int8) {
  const auto favor = [&](int64_t sequences, int64_t length, int iterations) {
    Register(Kernel::kFavorPositive, ComputeDType::kFloat32, sequences, length,
             iterations);
    if (bfloat16 && length < 262144) {
      Register(Kernel::kFavorPositive, ComputeDType::kBFloat16, sequences,
               length, iterations);
    }
    if (int8 && length < 262144) {
      Register(Kernel::kFavorPositive, ComputeDType::kInt8, sequences, length,
               iterations);
    }
  };
  for (const int64_t length : {512, 4096, 32768, 262144}) {
    favor(1, length, length >= 32768 ? 1 : 0);  // long runs: one pass each
  }
  favor(64, 128, 0);
  // Short requests as an embedding service sees them: one 200-token text
  // on an idle server, and 8 texts of 32 tokens.
  favor(1, 200, 0);
  favor(8, 32, 0);
  for (const int64_t length : {512, 4096, 32768}) {
    Register(Kernel::kSoftmaxExact, ComputeDType::kFloat32, 1, length,
             length >= 4096 ? 1 : 0);
  }
  Register(Kernel::kSoftmaxExact, ComputeDType::kFloat32, 64, 128, 0);
}

void PrintTargets(bool bfloat16, bool int8) {
  PrintRatio("FAVOR+ tokens/s, 32k over 4k", "favor+/L=32768", "favor+/L=4096",
             0.75);
  PrintRatio("FAVOR+ over exact tokens/s at 32k", "favor+/L=32768",
             "exact/L=32768", 10.0);
  if (int8) {
    for (const char* size : {"L=512", "L=4096", "64x128", "L=200"}) {
      PrintRatio(absl::StrCat("int8 over float32 at ", size).c_str(),
                 absl::StrCat("favor+ int8/", size),
                 absl::StrCat("favor+/", size), 1.3);
    }
  }
  if (!bfloat16) return;
  for (const char* size : {"L=512", "L=4096", "L=32768", "64x128"}) {
    PrintRatio(absl::StrCat("bfloat16 over float32 at ", size).c_str(),
               absl::StrCat("favor+ bf16/", size),
               absl::StrCat("favor+/", size), 2.0);
  }
}

}  // namespace
}  // namespace favor::model

int main(int argc, char** argv) {
  const int threads =
      favor::attention::ConfigureCpuParallelism({TakeOwnFlags(argc, argv)});
  const bool huge_pages =
      HugePages() && favor::attention::InstallHugePageCpuAllocator() ==
                         favor::attention::HugePageAllocatorState::kInstalled;
  // On a GPU bfloat16 always runs and int8 never does (a CPU path).
  const bool on_cpu = favor::model::BenchOptions().device == "cpu";
  const absl::Status bfloat16 =
      on_cpu ? favor::attention::cpu::CheckBFloat16Support() : absl::OkStatus();
  const absl::Status int8 =
      on_cpu ? favor::attention::cpu::CheckInt8Support()
             : absl::UnimplementedError("a CPU path");
  std::printf(
      "model_bench: device %s, %d threads, large tensors on huge pages: %s, "
      "register tiles: %s, bfloat16: %s, int8: %s\n",
      favor::model::BenchOptions().device.c_str(), threads,
      huge_pages ? "yes" : "no",
      favor::attention::cpu::GemmKernelName(
          favor::attention::cpu::ActiveGemmKernel()),
      bfloat16.ok() ? "yes" : std::string(bfloat16.message()).c_str(),
      int8.ok() ? favor::attention::cpu::Int8KernelName(
                      favor::attention::cpu::ActiveInt8Kernel())
                : std::string(int8.message()).c_str());
  favor::model::RegisterAll(bfloat16.ok(), int8.ok());
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  favor::model::PrintTargets(bfloat16.ok(), int8.ok());
  return 0;
}
