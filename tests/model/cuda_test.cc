// The whole encoder on CUDA, in every dtype, against float32 on the CPU
// (issue 17): the default model's pooled embeddings of inputs of 1 to 2k
// tokens. Skipped where LibTorch has no CUDA device; scripts/gpu-bench.sh
// runs it on a GPU machine, where a skip is a failure. Compiled against
// Debian 13's CUDA LibTorch by the trixie.Cuda test; never run there.
#include <ATen/Context.h>

#include <cstdio>
#include <string>

#include "gtest/gtest.h"
#include "server/model/dtype_agreement.h"
#include "server/model/model.h"

namespace favor::model {
namespace {

struct CudaCase {
  ComputeDType dtype;
  // Bounds on the cosine of each input's pooled embeddings: float32 differs
  // from the CPU by summation order only; bfloat16 and float16 by their
  // rounding, within issue 14's bounds for bfloat16 on the CPU.
  double min_mean_cosine;
  double min_cosine;
};

class CudaEncoderTest : public ::testing::TestWithParam<CudaCase> {};

TEST_P(CudaEncoderTest, PooledEmbeddingsMatchTheCpu) {
  if (!at::hasCUDA()) {
    GTEST_SKIP() << "LibTorch has no CUDA device here; run on a GPU machine";
  }
  const CudaCase& c = GetParam();
  auto reference = Model::Load(FAVOR_DEFAULT_MODEL_DIR);
  ASSERT_TRUE(reference.ok()) << reference.status();
  ModelOptions options;
  options.device = "cuda";
  options.dtype = c.dtype;
  auto candidate = Model::Load(FAVOR_DEFAULT_MODEL_DIR, options);
  ASSERT_TRUE(candidate.ok()) << candidate.status();
  EXPECT_EQ((*candidate)->description().device, "cuda:0");
  AgreementOptions agreement_options;
  agreement_options.num_inputs = 40;
  agreement_options.max_tokens = 2048;
  const auto agreement =
      CompareEmbeddings(**reference, **candidate, agreement_options);
  ASSERT_TRUE(agreement.ok()) << agreement.status();
  EXPECT_EQ(agreement->num_inputs, 40);
  EXPECT_GE(agreement->mean_cosine, c.min_mean_cosine);
  EXPECT_GE(agreement->min_cosine, c.min_cosine)
      << "at an input of " << agreement->min_cosine_length << " tokens";
  std::printf("cuda %s: cosine mean %.6f, min %.6f\n",
              std::string(NameOf(c.dtype)).c_str(), agreement->mean_cosine,
              agreement->min_cosine);
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
