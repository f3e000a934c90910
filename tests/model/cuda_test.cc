// The whole encoder on CUDA, in every dtype, against float32 on the CPU:
// the default model's pooled embeddings of inputs of 1 to 2k tokens.
// Skipped where LibTorch has no CUDA device; scripts/gpu-bench.sh runs it
// on a GPU machine, where a skip is a failure (it passed on an H200 with
// PyTorch 2.11's LibTorch, docs/gpu.md). Compiled against Debian 13's CUDA
// LibTorch by the trixie.Cuda test; never run there.
#include <ATen/Context.h>

#include <string>

#include "gtest/gtest.h"
#include "server/model/model.h"
#include "tests/model/agreement_test_util.h"

namespace favor::model {
namespace {

struct CudaCase {
  ComputeDType dtype;
  // Bounds on the cosine of each input's pooled embeddings: float32 differs
  // from the CPU by summation order only; bfloat16 and float16 by their
  // rounding, within the bounds bfloat16 on the CPU meets (mean ≥ 0.999,
  // min ≥ 0.995; bfloat16_test.cc).
  double min_mean_cosine;
  double min_cosine;
};

class CudaEncoderTest : public ::testing::TestWithParam<CudaCase> {};

TEST_P(CudaEncoderTest, PooledEmbeddingsMatchTheCpu) {
  if (!at::hasCUDA()) {
    GTEST_SKIP() << "LibTorch has no CUDA device here; run on a GPU machine";
  }
  const CudaCase& c = GetParam();
  ModelOptions options;
  options.device = "cuda";
  options.dtype = c.dtype;
  ExpectEmbeddingsAgree(FAVOR_DEFAULT_MODEL_DIR, options, c.min_mean_cosine,
                        c.min_cosine, "cuda " + std::string(NameOf(c.dtype)));
}

INSTANTIATE_TEST_SUITE_P(
    EveryDType, CudaEncoderTest,
    ::testing::Values(CudaCase{ComputeDType::kFloat32, 0.99999, 0.9999},
                      CudaCase{ComputeDType::kBFloat16, 0.999, 0.995},
                      CudaCase{ComputeDType::kFloat16, 0.999, 0.995}),
    [](const auto& param_info) {
      return std::string(NameOf(param_info.param.dtype));
    });

}  // namespace
}  // namespace favor::model
