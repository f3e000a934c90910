// The connection flags favor-cli and favor-bench share: parsed as the tools
// parse them, copied into ConnectionSettings, listed by FlagsUsage.
#include "client/cli/connection_flags.h"

#include <string>
#include <vector>

#include "client/cli/flag_parsing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(ConnectionFlagsTest, EveryFlagReachesTheSettings) {
  std::vector<std::string> arguments = {"tool",
                                        "--endpoint=a:1,b:2",
                                        "--tls",
                                        "--tls_roots_file=roots.pem",
                                        "--tls_server_name=favor.test",
                                        "--tls_client_cert_file=client.pem",
                                        "--tls_client_key_file=client.key",
                                        "--bearer_token=secret",
                                        "--bearer_token_file=token.txt"};
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  ASSERT_TRUE(ParseFlags(static_cast<int>(argv.size()), argv.data()).ok());

  const ConnectionSettings settings = ConnectionSettingsFromFlags();
  EXPECT_THAT(settings.endpoints, ElementsAre("a:1", "b:2"));
  EXPECT_TRUE(settings.tls);
  EXPECT_EQ(settings.tls_roots_file, "roots.pem");
  EXPECT_EQ(settings.tls_server_name, "favor.test");
  EXPECT_EQ(settings.tls_client_cert_file, "client.pem");
  EXPECT_EQ(settings.tls_client_key_file, "client.key");
  EXPECT_EQ(settings.bearer_token, "secret");
  EXPECT_EQ(settings.bearer_token_file, "token.txt");
  // Left to each tool's own flags.
  const ConnectionSettings defaults;
  EXPECT_EQ(settings.deadline, defaults.deadline);
  EXPECT_EQ(settings.max_attempts, defaults.max_attempts);
  EXPECT_EQ(settings.user_agent_prefix, "");
}

TEST(ConnectionFlagsTest, UsageListsThemWithTheToolsOwnFlags) {
  const std::string usage =
      FlagsUsage({"flag_parsing_test.cc", ConnectionFlagsFile()});
  for (const char* flag :
       {"--endpoint  ", "--tls  ", "--tls_roots_file", "--tls_server_name",
        "--tls_client_cert_file", "--tls_client_key_file", "--bearer_token  ",
        "--bearer_token_file", "--test_count"}) {
    EXPECT_THAT(usage, HasSubstr(flag));
  }
  EXPECT_THAT(FlagsUsage("flag_parsing_test.cc"), Not(HasSubstr("--endpoint")));
}

}  // namespace
}  // namespace favor::cli
