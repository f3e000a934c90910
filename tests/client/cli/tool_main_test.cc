// RunToolMain: flags, --help, and the run's status as the exit code.
#include "client/cli/tool_main.h"

#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

ABSL_FLAG(int, tool_main_test_level, 1, "a flag of this test");

namespace favor::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

int RunTool(
    std::vector<std::string> arguments,
    absl::FunctionRef<absl::Status(const std::vector<std::string>&)> run) {
  arguments.insert(arguments.begin(), "tool");
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  return RunToolMain(static_cast<int>(argv.size()), argv.data(), "tool",
                     {"tool_main_test.cc"}, run);
}

TEST(ToolMainTest, RunsWithThePositionalArgumentsAfterTheFlags) {
  std::vector<std::string> seen;
  const int code = RunTool({"embed", "--tool_main_test_level=4", "1,2"},
                           [&](const std::vector<std::string>& positional) {
                             seen = positional;
                             return absl::OkStatus();
                           });
  EXPECT_EQ(code, 0);
  EXPECT_THAT(seen, ElementsAre("embed", "1,2"));
  EXPECT_EQ(absl::GetFlag(FLAGS_tool_main_test_level), 4);
}

TEST(ToolMainTest, TheRunsStatusIsTheExitCodeAndOneStderrLine) {
  ::testing::internal::CaptureStderr();
  const int code = RunTool({}, [](const std::vector<std::string>&) {
    return absl::NotFoundError("no model 'x'");
  });
  EXPECT_EQ(code, 5);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "tool: NOT_FOUND: no model 'x'\n");
}

TEST(ToolMainTest, BadUsageIsInvalidArgumentWithoutRunning) {
  bool ran = false;
  ::testing::internal::CaptureStderr();
  const int code =
      RunTool({"--no_such_flag"}, [&](const std::vector<std::string>&) {
        ran = true;
        return absl::OkStatus();
      });
  EXPECT_EQ(code, 3);
  EXPECT_FALSE(ran);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("unknown flag '--no_such_flag'"));
}

TEST(ToolMainTest, HelpPrintsTheFlagsWithoutRunning) {
  bool ran = false;
  ::testing::internal::CaptureStdout();
  const int code = RunTool({"--help"}, [&](const std::vector<std::string>&) {
    ran = true;
    return absl::OkStatus();
  });
  EXPECT_EQ(code, 0);
  EXPECT_FALSE(ran);
  EXPECT_THAT(::testing::internal::GetCapturedStdout(),
              HasSubstr("--tool_main_test_level  a flag of this test"));
}

}  // namespace
}  // namespace favor::cli
