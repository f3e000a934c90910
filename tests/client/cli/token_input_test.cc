#include "client/cli/token_input.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(TokenInputTest, EachArgumentIsOneInput) {
  auto inputs = ParseTokenArguments({"101,2023,102", "7 8  9", "5"});
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_THAT(*inputs, ElementsAre(TokenIds{101, 2023, 102}, TokenIds{7, 8, 9},
                                   TokenIds{5}));
}

TEST(TokenInputTest, ArgumentsWithBadIdsNameTheArgument) {
  for (const char* bad : {"1,x,3", "-1", "1.5", "4294967296"}) {
    auto inputs = ParseTokenArguments({"1", bad});
    EXPECT_EQ(inputs.status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
    EXPECT_THAT(inputs.status().message(), HasSubstr("input argument 1"));
  }
  auto empty = ParseTokenArguments({" , "});
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(empty.status().message(), HasSubstr("no token id"));
}

TEST(TokenInputTest, IdsUpToTwoToTheThirtyTwo) {
  auto inputs = ParseTokenArguments({"0,4294967295"});
  ASSERT_TRUE(inputs.ok());
  EXPECT_THAT(*inputs, ElementsAre(TokenIds{0, 4294967295u}));
}

TEST(TokenInputTest, LinesMayBeJsonArraysObjectsOrPlainIds) {
  auto inputs = ParseTokenLines(
      "# a comment\n"
      "[101, 2023, 102]\n"
      "\n"
      "{\"token_ids\": [1, 2], \"id\": \"ignored\"}\n"
      "  3,4 5  \r\n",
      "stdin");
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_THAT(*inputs, ElementsAre(TokenIds{101, 2023, 102}, TokenIds{1, 2},
                                   TokenIds{3, 4, 5}));
}

TEST(TokenInputTest, BadLinesNameTheSourceAndLine) {
  const char* bad_lines[] = {
      "[1, -2]",     "[1, 2.5]", "[1, \"2\"]",          "{\"ids\": [1]}",
      "[1, 2",       "[]",       "{\"token_ids\": []}", "1 two",
      "[4294967296]"};
  for (const char* bad : bad_lines) {
    auto inputs = ParseTokenLines(std::string("[1]\n\n") + bad + "\n", "f.txt");
    EXPECT_EQ(inputs.status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
    EXPECT_THAT(inputs.status().message(), HasSubstr("f.txt line 3")) << bad;
  }
}

TEST(TokenInputTest, ReadsAFile) {
  const std::string path = ::testing::TempDir() + "/tokens.jsonl";
  {
    std::ofstream file(path);
    file << "[1,2,3]\n{\"token_ids\":[4]}\n";
  }
  auto inputs = ReadTokenFile(path);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_THAT(*inputs, ElementsAre(TokenIds{1, 2, 3}, TokenIds{4}));
  std::remove(path.c_str());
  auto missing = ReadTokenFile(path);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr(path));
}

}  // namespace
}  // namespace favor::cli
