// WriteRandomModel (random_model.cc).
#include "server/model/random_model.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/model/model_test_util.h"

namespace favor::model {
namespace {

using ::testing::HasSubstr;

TEST_F(ModelTest, RandomModelsAreAPureFunctionOfConfigAndSeed) {
  auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  RandomModelOptions options;
  options.seed = 3;
  ASSERT_TRUE(WriteRandomModel(SmallConfig(), dir_ + "/a", options).ok());
  ASSERT_TRUE(WriteRandomModel(SmallConfig(), dir_ + "/b", options).ok());
  options.seed = 4;
  ASSERT_TRUE(WriteRandomModel(SmallConfig(), dir_ + "/c", options).ok());
  EXPECT_EQ(read(dir_ + "/a/model.safetensors"),
            read(dir_ + "/b/model.safetensors"));
  EXPECT_NE(read(dir_ + "/a/model.safetensors"),
            read(dir_ + "/c/model.safetensors"));
}

// A spread that is not a finite number >= 0 (`favor-model init --init_std
// nan` would write a NaN model and exit 0) and a vocabulary of two billion
// (which would die of std::bad_alloc) are refused before anything is
// written.
TEST_F(ModelTest, RefusesANonFiniteSpreadAndAModelTooLargeToHold) {
  RandomModelOptions options;
  for (const double bad : {std::nan(""), -0.5, HUGE_VAL}) {
    options.init_std = bad;
    const absl::Status status =
        WriteRandomModel(SmallConfig(), dir_ + "/nan", options);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("must be a finite number >= 0"));
  }
  options.init_std = 0.02;
  ModelConfig huge = SmallConfig();
  huge.vocab_size = 2000000000;
  huge.hidden_size = 4096;
  huge.num_attention_heads = 4;
  const absl::Status status = WriteRandomModel(huge, dir_ + "/huge", options);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(status.message()), HasSubstr("GiB as float32"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/huge/model.safetensors"));
}

}  // namespace
}  // namespace favor::model
