// A GoogleTest fixture with a fresh directory per test, removed afterwards.
#ifndef FAVOR_TESTS_MODEL_TEMP_DIR_TEST_H_
#define FAVOR_TESTS_MODEL_TEMP_DIR_TEST_H_

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace favor::model {

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "favor_model_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
};

}  // namespace favor::model

#endif  // FAVOR_TESTS_MODEL_TEMP_DIR_TEST_H_
