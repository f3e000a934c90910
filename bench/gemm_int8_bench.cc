// The encoder's linear layers on one core, float32 against int8
// (ComputeDType kInt8): cpu::GemmPackedB on the weight packed for the
// float32 tiles, against cpu::QuantizeRowsInt8 + cpu::GemmInt8 on the
// weight quantised at load, at the default model's shapes (a block of 256
// tokens; hidden 768, intermediate 3072):
//
//   Linear/<in>x<out>/<impl>   one product of 256 rows, GOP/s (2 · rows ·
//     in · out per iteration: int8 counts the same multiply-adds)
//   int8_quantize_only         the rows' quantisation alone (part of int8)
//
//   OMP_WAIT_POLICY=passive build/bench/gemm_int8_bench
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "server/attention/cpu_gemm.h"
#include "server/attention/cpu_gemm_int8.h"

namespace favor::attention {
namespace {

constexpr int64_t kRows = 256;

enum class Impl { kFloat32, kInt8, kInt8QuantizeOnly };

void Linear(benchmark::State& state, int64_t in, int64_t out, Impl impl) {
  at::manual_seed(0);
  const at::Tensor x = at::randn({kRows, in});
  const at::Tensor w = at::randn({in, out}) * 0.05;
  const at::Tensor bias = at::randn({out});
  at::Tensor y = at::empty({kRows, out});
  const cpu::GemmKernel kernel = cpu::ActiveGemmKernel();
  if (impl == Impl::kFloat32) {
    if (cpu::PanelColumns(kernel) == 0) {
      state.SkipWithError("no float32 tiles on this CPU");
      return;
    }
    std::vector<float> packed(cpu::PackedBSize(in, out, kernel));
    cpu::PackB(in, out, w.data_ptr<float>(), out, kernel, packed.data());
    for (auto _ : state) {
      cpu::GemmPackedB(kRows, out, in, {x.data_ptr<float>(), in, 1},
                       packed.data(), kernel, y.data_ptr<float>(), out,
                       /*accumulate=*/false, bias.data_ptr<float>());
      benchmark::DoNotOptimize(y.data_ptr<float>());
    }
  } else {
    std::vector<int8_t> packed(cpu::Int8PackedWeightBytes(in, out));
    std::vector<float> scales(out);
    std::vector<int32_t> sums(out);
    cpu::QuantizeWeightInt8(in, out, w.data_ptr<float>(), out, packed.data(),
                            scales.data(), sums.data());
    const int64_t stride = cpu::Int8PaddedDepth(in);
    std::vector<uint8_t> q(kRows * stride);
    std::vector<float> row_scales(kRows);
    std::vector<int32_t> zero_points(kRows);
    for (auto _ : state) {
      cpu::QuantizeRowsInt8(kRows, in, x.data_ptr<float>(), in, q.data(),
                            stride, row_scales.data(), zero_points.data());
      if (impl == Impl::kInt8) {
        cpu::GemmInt8(kRows, out, in,
                      {q.data(), stride, row_scales.data(), zero_points.data()},
                      {packed.data(), scales.data(), sums.data()},
                      y.data_ptr<float>(), out, /*accumulate=*/false,
                      bias.data_ptr<float>());
      }
      benchmark::DoNotOptimize(y.data_ptr<float>());
      benchmark::DoNotOptimize(q.data());
    }
  }
  state.counters["GOP/s"] = benchmark::Counter(
      2.0 * kRows * in * out, benchmark::Counter::kIsIterationInvariantRate,
      benchmark::Counter::kIs1000);
  state.SetLabel(impl == Impl::kFloat32 ? cpu::GemmKernelName(kernel)
                                        : cpu::Int8KernelName(
                                              cpu::ActiveInt8Kernel()));
}

void Register() {
  struct Shape {
    int64_t in, out;
  };
  for (const Shape s : {Shape{768, 2304}, Shape{768, 768}, Shape{768, 3072},
                        Shape{3072, 768}}) {
    const std::string shape =
        std::to_string(s.in) + "x" + std::to_string(s.out);
    for (const auto& [name, impl] :
         {std::pair{"float32", Impl::kFloat32}, std::pair{"int8", Impl::kInt8},
          std::pair{"int8_quantize_only", Impl::kInt8QuantizeOnly}}) {
      benchmark::RegisterBenchmark(
          ("Linear/" + shape + "/" + name).c_str(),
          [s, impl = impl](benchmark::State& state) {
            Linear(state, s.in, s.out, impl);
          })
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace
}  // namespace favor::attention

int main(int argc, char** argv) {
  at::set_num_threads(1);
  favor::attention::Register();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
