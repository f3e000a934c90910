// int8 (ComputeDType kInt8) against float32: pooled embeddings' cosines on
// the default and the random model, a sequence's vectors alone and packed,
// head groups, and the refusals (a CPU without AVX2, a CUDA device).
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/attention/cpu_features.h"
#include "server/model/dtype_agreement.h"
#include "tests/model/agreement_test_util.h"
#include "tests/model/model_test_util.h"

namespace favor::model {
namespace {

using ::testing::HasSubstr;
namespace cpu = attention::cpu;

ModelOptions Int8(ModelOptions options = SmallBlocks()) {
  options.dtype = ComputeDType::kInt8;
  return options;
}

class Int8Test : public ModelTest {
 protected:
  void SetUp() override {
    ModelTest::SetUp();
    if (!cpu::DetectedCpuFeatures().avx2) {
      GTEST_SKIP() << "int8 needs AVX2, which this CPU lacks (the refusal "
                      "is tested by RefusedOnACpuWithoutAvx2)";
    }
  }
};

TEST(Int8NameTest, ParsesAndNamesInt8) {
  EXPECT_EQ(*ParseComputeDType("int8"), ComputeDType::kInt8);
  EXPECT_EQ(*ParseComputeDType("INT8"), ComputeDType::kInt8);
  EXPECT_EQ(NameOf(ComputeDType::kInt8), "int8");
  EXPECT_THAT(std::string(ParseComputeDType("int4").status().message()),
              HasSubstr("\"int8\""));
}

class Int8RefusalTest : public ModelTest {
 protected:
  void TearDown() override {
    cpu::SetCpuFeaturesForTesting(std::nullopt);
    ModelTest::TearDown();
  }
};

TEST_F(Int8RefusalTest, RefusedOnACpuWithoutAvx2) {
  ASSERT_NE(Make(SmallConfig()), nullptr);
  cpu::SetCpuFeaturesForTesting(cpu::CpuFeatures{});  // baseline x86-64
  const absl::Status refused = Model::Load(dir_ + "/model", Int8()).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.message()), HasSubstr("needs AVX2"));
  EXPECT_EQ(ValidateModelOptions(Int8()).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(ValidateModelOptions({}).ok());
}

TEST_F(Int8RefusalTest, RefusedOnCuda) {
  ModelOptions options = Int8();
  options.device = "cuda";
  const absl::Status refused = ValidateModelOptions(options);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("int8 runs on the CPU"));
}

TEST_F(Int8Test, DescriptionReportsTheDtype) {
  ASSERT_NE(Make(SmallConfig()), nullptr);
  auto model = Model::Load(dir_ + "/model", Int8());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->description().dtype, ComputeDType::kInt8);
  EXPECT_EQ((*model)->description().memory.value_bytes, 4);
}

// The bounds of the reduced-precision path (mean cosine ≥ 0.999;
// none below 0.995) over inputs of 1 to 2k tokens; favor-model compare
// --dtype int8 runs the full 1,000 inputs of up to 8k.
TEST_F(Int8Test, DefaultModelKeepsItsEmbeddings) {
  ExpectEmbeddingsAgree(FAVOR_DEFAULT_MODEL_DIR, Int8(ModelOptions()), 0.999,
                        0.995, "default, int8");
}

TEST_F(Int8Test, RandomModelKeepsItsEmbeddings) {
  ExpectEmbeddingsAgree(FAVOR_RANDOM_MODEL_DIR, Int8(ModelOptions()), 0.999,
                        0.995, "random, int8");
}

// The products run in int8 (the embeddings move, a little) and every row
// is quantised on its own, so a sequence's vectors are the same bits alone
// and packed with others, whatever blocks they fall in.
TEST_F(Int8Test, PackedEqualsAloneExactlyAndDiffersFromFloat32) {
  ModelConfig config = SmallConfig();
  config.position_embedding_type = PositionEmbedding::kRotary;
  ASSERT_NE(Make(config), nullptr);
  auto model = Model::Load(dir_ + "/model", Int8());
  auto float32 = Model::Load(dir_ + "/model", SmallBlocks());
  ASSERT_TRUE(model.ok() && float32.ok());
  const std::vector<int64_t> lengths = {37, 1, 130, 5, 64, 2};
  const PackedBatch batch = Pack(lengths);
  const std::vector<int32_t>& ids = batch.ids;
  const std::vector<int64_t>& offsets = batch.offsets;
  EmbedOptions none;
  none.pooling = Pooling::kNone;
  const Embeddings packed = EmbedOrDie(**model, ids, offsets, none);
  const Embeddings reference = EmbedOrDie(**float32, ids, offsets, none);
  for (size_t s = 0; s < lengths.size(); ++s) {
    const Embeddings alone =
        Alone(**model, Tokens(lengths[s], static_cast<int>(s)), none);
    for (int64_t r = 0; r < alone.num_rows(); ++r) {
      const auto want = alone.Row(r);
      const auto got = packed.Row(packed.row_offsets[s] + r);
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(),
                               want.size() * sizeof(float)))
          << "sequence " << s << ", row " << r;
    }
  }
  const double moved = RelativeError(packed.Row(0), reference.Row(0));
  EXPECT_GT(moved, 1e-6) << "int8 gave float32's bits: not run in int8";
  EXPECT_LT(moved, 0.1);
}

// Head groups (a pass budget below one head) slice the fused
// query|key|value layer by heads; int8 scales are per column, so the
// slices quantise to the same bytes and the vectors are those of one pass.
TEST_F(Int8Test, HeadGroupsChangeNothing) {
  ModelConfig config = SmallConfig();
  config.position_embedding_type = PositionEmbedding::kRotary;
  ASSERT_NE(Make(config), nullptr);
  ModelOptions bounded = Int8();
  bounded.max_attention_pass_bytes = 1;
  auto whole = Model::Load(dir_ + "/model", Int8());
  auto parts = Model::Load(dir_ + "/model", bounded);
  ASSERT_TRUE(whole.ok() && parts.ok());
  const std::vector<int32_t> ids = Tokens(70, 3);
  EmbedOptions none;
  none.pooling = Pooling::kNone;
  const Embeddings want = Alone(**whole, ids, none);
  const Embeddings got = Alone(**parts, ids, none);
  ASSERT_EQ(got.num_rows(), want.num_rows());
  for (int64_t r = 0; r < want.num_rows(); ++r) {
    EXPECT_LE(RelativeError(got.Row(r), want.Row(r)), 1e-5) << "row " << r;
  }
}

}  // namespace
}  // namespace favor::model
