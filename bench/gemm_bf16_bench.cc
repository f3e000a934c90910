// FAVOR+'s three matrix products in bfloat16 on one core: the
// AVX512-BF16 kernel cpu::GemmBF16 against oneDNN's bfloat16 matmul (what
// LibTorch's at::mm runs for bfloat16 on this CPU) and the float32 kernel
// cpu::Gemm, at FAVOR+'s shapes: m = 256 features, d = 64, steps of 64 and
// 512 tokens. Whichever bfloat16 product is faster is what FAVOR+'s
// bfloat16 path should call.
//
//   Product/<name>/<tokens>/<impl>   one product, GFLOP/s
//     features:  u = x · Wᵀ        (tokens × 64) · (64 × 256)
//     key_sums:  S += uᵀ · v        (256 × tokens) · (tokens × 64)
//     outputs:   n = u · S          (tokens × 256) · (256 × 64)
//   Products/<tokens>/<impl>         the four products of a key and a query
//     pass over 16k tokens, with what each path pays around them (bfloat16:
//     rounding and packing the float32 features, transposing v per step,
//     packing S once)
//
// oneDNN writes bfloat16 outputs here (LibTorch 1.13 has no bfloat16 ×
// bfloat16 → float32 product on the CPU), which FAVOR+ could not use for
// its float32 key sums; its rows measure the product alone.
//
//   OMP_WAIT_POLICY=passive build/bench/gemm_bf16_bench
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "server/attention/cpu_gemm.h"
#include "server/attention/cpu_gemm_bf16.h"
#include "server/attention/parallelism.h"

namespace favor::attention {
namespace {

constexpr int64_t kDim = 64, kFeatures = 256, kTokens = 1 << 14;

enum class Impl { kGemmBF16, kOneDnnBF16, kGemmFloat32 };

struct Shape {
  const char* name;
  int64_t rows, cols, depth;
};

Shape ShapeOf(int which, int64_t tokens) {
  switch (which) {
    case 0:
      return {"features", tokens, kFeatures, kDim};
    case 1:
      return {"key_sums", kFeatures, kDim, tokens};
    default:
      return {"outputs", tokens, kDim, kFeatures};
  }
}

void SetGflops(benchmark::State& state, double flop_per_iteration) {
  state.counters["GFLOP/s"] = benchmark::Counter(
      flop_per_iteration, benchmark::Counter::kIsIterationInvariantRate,
      benchmark::Counter::kIs1000);
}

void Product(benchmark::State& state, int which, int64_t tokens, Impl impl) {
  const Shape s = ShapeOf(which, tokens);
  at::manual_seed(0);
  const at::Tensor a = at::randn({s.rows, s.depth});
  const at::Tensor b = at::randn({s.depth, s.cols});
  at::Tensor c = at::zeros({s.rows, s.cols});
  const bool accumulate = which == 1;
  if (impl == Impl::kGemmBF16) {
    if (!cpu::GemmBF16IsFast()) {
      state.SkipWithError("no AVX512-BF16 on this CPU");
      return;
    }
    std::vector<cpu::BFloat16Bits> a16(s.rows * s.depth);
    std::vector<cpu::BFloat16Bits> packed(cpu::PackedBF16Size(s.depth, s.cols));
    cpu::ConvertToBF16(s.rows, s.depth, {a.data_ptr<float>(), s.depth, 1},
                       a16.data(), s.depth);
    cpu::PackBF16(s.depth, s.cols, {b.data_ptr<float>(), s.cols, 1},
                  packed.data());
    for (auto _ : state) {
      cpu::GemmBF16(s.rows, s.cols, s.depth, a16.data(), s.depth, packed.data(),
                    c.data_ptr<float>(), s.cols, accumulate);
    }
  } else if (impl == Impl::kOneDnnBF16) {
    const at::Tensor a16 = a.to(at::kBFloat16), b16 = b.to(at::kBFloat16);
    at::Tensor c16 = c.to(at::kBFloat16);
    for (auto _ : state) {
      if (accumulate) {
        c16.addmm_(a16, b16);
      } else {
        at::mm_out(c16, a16, b16);
      }
    }
  } else {
    for (auto _ : state) {
      cpu::Gemm(s.rows, s.cols, s.depth, {a.data_ptr<float>(), s.depth, 1},
                b.data_ptr<float>(), s.cols, c.data_ptr<float>(), s.cols,
                accumulate);
    }
  }
  SetGflops(state, 2.0 * s.rows * s.cols * s.depth);
}

// The four products over kTokens tokens in steps of `step` as a bfloat16
// FAVOR+ path on GemmBF16 would run them: x and v arrive in bfloat16 (a
// bfloat16 model's projections); the features leave the first product in
// float32 (for the float32 exp) and are rounded once for the product that
// reads them. The key sums are kept transposed, Sᵀ (d × m) += vᵀ · u, so
// that the large operand u is packed by the vectorised PackBF16 and only
// the small v is transposed; S is packed once for the query pass.
void ProductsBF16(benchmark::State& state, int64_t step) {
  at::manual_seed(0);
  const at::Tensor x = at::randn({kTokens, kDim}).to(at::kBFloat16);
  const at::Tensor v = at::randn({kTokens, kDim}).to(at::kBFloat16);
  const at::Tensor w = at::randn({kDim, kFeatures}) * 0.1;
  std::vector<cpu::BFloat16Bits> w16(cpu::PackedBF16Size(kDim, kFeatures));
  cpu::PackBF16(kDim, kFeatures, {w.data_ptr<float>(), kFeatures, 1},
                w16.data());
  std::vector<float> u(step * kFeatures), n(step * kDim);
  std::vector<float> sums_t(kDim * kFeatures, 0.0f);
  std::vector<cpu::BFloat16Bits> u16(cpu::PackedBF16Size(step, kFeatures));
  std::vector<cpu::BFloat16Bits> v_t(kDim * step);
  std::vector<cpu::BFloat16Bits> s16(cpu::PackedBF16Size(kFeatures, kDim));
  const auto* xs = reinterpret_cast<const cpu::BFloat16Bits*>(x.data_ptr());
  const auto* vs = reinterpret_cast<const cpu::BFloat16Bits*>(v.data_ptr());
  for (auto _ : state) {
    for (int64_t start = 0; start < kTokens; start += step) {  // keys
      cpu::GemmBF16(step, kFeatures, kDim, xs + start * kDim, kDim, w16.data(),
                    u.data(), kFeatures, false);
      cpu::PackBF16(step, kFeatures, {u.data(), kFeatures, 1}, u16.data());
      cpu::CopyBF16(kDim, step, vs + start * kDim, 1, kDim, v_t.data(), step);
      cpu::GemmBF16(kDim, kFeatures, step, v_t.data(), step, u16.data(),
                    sums_t.data(), kFeatures, true);
    }
    cpu::PackBF16(kFeatures, kDim, {sums_t.data(), 1, kFeatures}, s16.data());
    for (int64_t start = 0; start < kTokens; start += step) {  // queries
      cpu::GemmBF16(step, kFeatures, kDim, xs + start * kDim, kDim, w16.data(),
                    u.data(), kFeatures, false);
      cpu::ConvertToBF16(step, kFeatures, {u.data(), kFeatures, 1}, u16.data(),
                         kFeatures);
      cpu::GemmBF16(step, kDim, kFeatures, u16.data(), kFeatures, s16.data(),
                    n.data(), kDim, false);
    }
    benchmark::DoNotOptimize(n.data());
  }
  SetGflops(state, 8.0 * kDim * kFeatures * kTokens);
}

// The float32 path's four products, as attention_bench's ProductsGemm.
void ProductsFloat32(benchmark::State& state, int64_t step) {
  at::manual_seed(0);
  const at::Tensor x = at::randn({kTokens, kDim}),
                   v = at::randn({kTokens, kDim});
  const at::Tensor w = at::randn({kDim, kFeatures}) * 0.1;
  std::vector<float> u(step * kFeatures), n(step * kDim);
  std::vector<float> sums(kFeatures * kDim, 0.0f);
  for (auto _ : state) {
    for (int pass = 0; pass < 2; ++pass) {
      for (int64_t start = 0; start < kTokens; start += step) {
        const float* xs = x.data_ptr<float>() + start * kDim;
        cpu::Gemm(step, kFeatures, kDim, {xs, kDim, 1}, w.data_ptr<float>(),
                  kFeatures, u.data(), kFeatures, false);
        if (pass == 0) {
          cpu::Gemm(kFeatures, kDim, step, {u.data(), 1, kFeatures},
                    v.data_ptr<float>() + start * kDim, kDim, sums.data(), kDim,
                    true);
        } else {
          cpu::Gemm(step, kDim, kFeatures, {u.data(), kFeatures, 1},
                    sums.data(), kDim, n.data(), kDim, false);
        }
      }
    }
    benchmark::DoNotOptimize(n.data());
  }
  SetGflops(state, 8.0 * kDim * kFeatures * kTokens);
}

const char* ImplName(Impl impl) {
  switch (impl) {
    case Impl::kGemmBF16:
      return "gemm_bf16";
    case Impl::kOneDnnBF16:
      return "onednn_bf16";
    case Impl::kGemmFloat32:
      break;
  }
  return "gemm_fp32";
}

void RegisterAll() {
  for (const int64_t tokens : {64, 512}) {
    for (int which = 0; which < 3; ++which) {
      for (const Impl impl :
           {Impl::kGemmBF16, Impl::kOneDnnBF16, Impl::kGemmFloat32}) {
        const std::string name = std::string("Product/") +
                                 ShapeOf(which, tokens).name + "/" +
                                 std::to_string(tokens) + "/" + ImplName(impl);
        benchmark::RegisterBenchmark(name.c_str(),
                                     [=](benchmark::State& state) {
                                       Product(state, which, tokens, impl);
                                     });
      }
    }
    benchmark::RegisterBenchmark(
        ("Products/" + std::to_string(tokens) + "/gemm_bf16").c_str(),
        [=](benchmark::State& state) { ProductsBF16(state, tokens); })
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(
        ("Products/" + std::to_string(tokens) + "/gemm_fp32").c_str(),
        [=](benchmark::State& state) { ProductsFloat32(state, tokens); })
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace
}  // namespace favor::attention

int main(int argc, char** argv) {
  favor::attention::ConfigureCpuParallelism(
      {1});  // one core, as FAVOR+'s tasks
  favor::attention::RegisterAll();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
