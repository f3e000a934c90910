// Helpers of the model config tests.
#ifndef FAVOR_TESTS_MODEL_MODEL_CONFIG_TEST_UTIL_H_
#define FAVOR_TESTS_MODEL_MODEL_CONFIG_TEST_UTIL_H_

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/model/model_config.h"

namespace favor::model {

inline absl::StatusOr<ModelConfig> Parse(const std::string& json) {
  return ParseModelConfig(json, "test/config.json");
}

// Parses `json` and expects INVALID_ARGUMENT whose message names the source
// and contains every one of `parts`.
inline void ExpectInvalid(const std::string& json,
                          const std::vector<std::string>& parts) {
  auto config = Parse(json);
  ASSERT_FALSE(config.ok()) << json << " was accepted";
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(config.status().message());
  EXPECT_THAT(message, ::testing::HasSubstr("test/config.json"));
  for (const std::string& part : parts) {
    EXPECT_THAT(message, ::testing::HasSubstr(part)) << json;
  }
}

}  // namespace favor::model

#endif  // FAVOR_TESTS_MODEL_MODEL_CONFIG_TEST_UTIL_H_
