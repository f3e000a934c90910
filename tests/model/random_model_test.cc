// WriteRandomModel (random_model.cc).
#include "server/model/random_model.h"

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

}  // namespace
}  // namespace favor::model
