// ModelRepository (model_repository.cc).
#include "server/model/model_repository.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/model/model_test_util.h"

namespace favor::model {
namespace {

using ::testing::HasSubstr;

TEST_F(ModelTest, RepositoryLoadsEveryModelAndReportsEachFailure) {
  const std::string repository = dir_ + "/repository";
  ASSERT_TRUE(WriteRandomModel(SmallConfig(), repository + "/b").ok());
  ModelConfig exact = SmallConfig();
  exact.attention.kernel = attention::Kernel::kSoftmaxExact;
  ASSERT_TRUE(WriteRandomModel(exact, repository + "/a").ok());
  std::filesystem::create_directories(repository + "/broken");
  std::filesystem::create_directories(repository + "/.hidden");
  std::ofstream(repository + "/README") << "not a model";
  auto loaded = ModelRepository::Load(repository);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const ModelRepository& repo = **loaded;
  EXPECT_EQ(repo.ModelNames(), (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(repo.failures().size(), 1u);
  EXPECT_EQ(repo.failures()[0].name, "broken");
  EXPECT_THAT(std::string(repo.failures()[0].status.message()),
              HasSubstr("broken/config.json"));
  ASSERT_TRUE(repo.Find("a").ok());
  EXPECT_EQ((*repo.Find("a"))->config().attention.kernel,
            attention::Kernel::kSoftmaxExact);
  EXPECT_EQ(repo.Find("c").status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(repo.Find("c").status().message()),
              HasSubstr("models: a, b"));
  EXPECT_THAT(std::string(repo.Find("broken").status().message()),
              HasSubstr("failed to load"));
  EXPECT_EQ(ModelRepository::Load(dir_ + "/nowhere").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace favor::model
