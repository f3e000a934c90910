// ParseFlags on flags defined here (a test may define flags; the tools
// define theirs in their main.cc).
#include "client/cli/flag_parsing.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

ABSL_FLAG(std::string, test_name, "default-name", "a string flag");
ABSL_FLAG(int64_t, test_count, 3, "an integer flag");
ABSL_FLAG(bool, test_switch, false, "a bool flag");
ABSL_FLAG(absl::Duration, test_wait, absl::Seconds(1), "a duration flag");
ABSL_FLAG(std::vector<std::string>, test_list, {"a"}, "a list flag");

namespace favor::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<ParsedCommandLine> Parse(std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), "program");
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  return ParseFlags(static_cast<int>(argv.size()), argv.data());
}

class FlagParsingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::SetFlag(&FLAGS_test_name, "default-name");
    absl::SetFlag(&FLAGS_test_count, 3);
    absl::SetFlag(&FLAGS_test_switch, false);
    absl::SetFlag(&FLAGS_test_wait, absl::Seconds(1));
  }
};

TEST_F(FlagParsingTest, SetsFlagsInEveryFormAndKeepsPositionals) {
  auto parsed =
      Parse({"embed", "--test_name=x", "1,2", "--test_count", "7",
             "-test_switch", "--test_wait=250ms", "--test_list=p,q", "3"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_THAT(parsed->positional, ElementsAre("embed", "1,2", "3"));
  EXPECT_FALSE(parsed->help);
  EXPECT_EQ(absl::GetFlag(FLAGS_test_name), "x");
  EXPECT_EQ(absl::GetFlag(FLAGS_test_count), 7);
  EXPECT_TRUE(absl::GetFlag(FLAGS_test_switch));
  EXPECT_EQ(absl::GetFlag(FLAGS_test_wait), absl::Milliseconds(250));
  EXPECT_THAT(absl::GetFlag(FLAGS_test_list), ElementsAre("p", "q"));
}

TEST_F(FlagParsingTest, NoPrefixAndDoubleDash) {
  absl::SetFlag(&FLAGS_test_switch, true);
  auto parsed = Parse({"--notest_switch", "--", "--test_count=9", "-"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_FALSE(absl::GetFlag(FLAGS_test_switch));
  EXPECT_EQ(absl::GetFlag(FLAGS_test_count), 3);
  EXPECT_THAT(parsed->positional, ElementsAre("--test_count=9", "-"));
}

TEST_F(FlagParsingTest, HelpIsReported) {
  auto parsed = Parse({"--help"});
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(parsed->help);
}

TEST_F(FlagParsingTest, ErrorsAreInvalidArgumentNamingTheArgument) {
  struct Case {
    std::vector<std::string> arguments;
    const char* message;
  };
  const Case cases[] = {
      {{"--no_such_flag=1"}, "unknown flag '--no_such_flag=1'"},
      {{"--test_count=seven"}, "bad value 'seven' for --test_count"},
      {{"--test_count"}, "flag '--test_count' needs a value"},
      {{"--test_wait=5"}, "bad value '5' for --test_wait"},
      {{"--test_switch=maybe"}, "bad value 'maybe' for --test_switch"},
      {{"--notest_switch=true"}, "takes no value"},
      {{"--notest_name"}, "unknown flag"},
  };
  for (const Case& c : cases) {
    auto parsed = Parse(c.arguments);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument)
        << c.arguments[0];
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.message));
    EXPECT_THAT(parsed.status().message(), HasSubstr("--help"));
  }
}

TEST_F(FlagParsingTest, UsageListsThisFilesFlagsWithDefaults) {
  const std::string usage = FlagsUsage("flag_parsing_test.cc");
  EXPECT_THAT(usage, HasSubstr("--test_count  an integer flag\n      "
                               "default: 3\n"));
  EXPECT_THAT(usage, HasSubstr("--test_wait"));
  // Flags of other files (gtest's, absl's) are not listed.
  EXPECT_THAT(usage, ::testing::Not(HasSubstr("--flagfile")));
}

TEST_F(FlagParsingTest, UsageMatchesThisFilesOwnPathAbsoluteOrRelative) {
  // __FILE__ is absolute in a plain build and relative under ccache's
  // base_dir; absl drops the leading '/' from Filename() either way.
  EXPECT_THAT(FlagsUsage(__FILE__), HasSubstr("--test_count"));
  EXPECT_THAT(FlagsUsage(std::string("/") + __FILE__),
              HasSubstr("--test_count"));
}

}  // namespace
}  // namespace favor::cli
