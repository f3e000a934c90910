#include "client/cli/exit_code.h"

#include "gtest/gtest.h"

namespace favor::cli {
namespace {

TEST(ExitCodeTest, IsTheGrpcCodeNumber) {
  EXPECT_EQ(ExitCode(absl::OkStatus()), 0);
  EXPECT_EQ(ExitCode(absl::InvalidArgumentError("x")), 3);
  EXPECT_EQ(ExitCode(absl::DeadlineExceededError("x")), 4);
  EXPECT_EQ(ExitCode(absl::NotFoundError("x")), 5);
  EXPECT_EQ(ExitCode(absl::ResourceExhaustedError("x")), 8);
  EXPECT_EQ(ExitCode(absl::UnavailableError("x")), 14);
  EXPECT_EQ(ExitCode(absl::UnauthenticatedError("x")), 16);
}

TEST(ExitCodeTest, ErrorIsOneLine) {
  EXPECT_EQ(ErrorLine("favor-cli", absl::OkStatus()), "");
  EXPECT_EQ(ErrorLine("favor-cli", absl::NotFoundError("no model 'x'")),
            "favor-cli: NOT_FOUND: no model 'x'");
  EXPECT_EQ(
      ErrorLine("favor-bench", absl::InternalError("first\nsecond\r\nthird")),
      "favor-bench: INTERNAL: first second  third");
}

}  // namespace
}  // namespace favor::cli
