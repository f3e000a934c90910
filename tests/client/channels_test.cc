// From endpoints to gRPC targets (src/channels.h), and option validation.
#include "channels.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::client_internal {
namespace {

using ::testing::ElementsAre;

TEST(TargetsForTest, OneEndpointIsUsedAsGiven) {
  EXPECT_THAT(*TargetsFor({"favor.example:50051"}),
              ElementsAre("favor.example:50051"));
  EXPECT_THAT(*TargetsFor({"dns:///favor:1"}), ElementsAre("dns:///favor:1"));
}

TEST(TargetsForTest, IpLiteralsMergeIntoOneTargetPerFamily) {
  EXPECT_THAT(
      *TargetsFor({"10.0.0.1:1", "[::1]:2", "10.0.0.2:3", "[fe80::1]:4"}),
      ElementsAre("ipv4:10.0.0.1:1,10.0.0.2:3", "ipv6:[::1]:2,[fe80::1]:4"));
}

TEST(TargetsForTest, HostNamesAndSchemesKeepAChannelEach) {
  EXPECT_THAT(
      *TargetsFor({"a.example:1", "10.0.0.1:2", "unix:/tmp/s", "10.0.0.3:4"}),
      ElementsAre("a.example:1", "unix:/tmp/s", "ipv4:10.0.0.1:2,10.0.0.3:4"));
  // Not IP literals: a missing port, a bad address.
  EXPECT_THAT(*TargetsFor({"10.0.0.1", "300.0.0.1:5"}),
              ElementsAre("10.0.0.1", "300.0.0.1:5"));
}

TEST(TargetsForTest, EmptyEndpointsAreRefused) {
  EXPECT_EQ(TargetsFor({}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TargetsFor({"a:1", ""}).status().message(),
            "ClientOptions.endpoints[1] is empty");
}

TEST(ValidateOptionsTest, DefaultsAreValidAndLimitsAreNamed) {
  ClientOptions options;
  EXPECT_TRUE(ValidateOptions(options).ok());
  options.retry.jitter_fraction = 1.5;
  EXPECT_THAT(std::string(ValidateOptions(options).message()),
              ::testing::HasSubstr("jitter_fraction"));
  options = ClientOptions();
  options.retry.backoff_multiplier = 0.5;
  EXPECT_THAT(std::string(ValidateOptions(options).message()),
              ::testing::HasSubstr("backoff_multiplier"));
  options = ClientOptions();
  options.tls.root_certificates_pem = "PEM";  // but TLS is off
  EXPECT_EQ(ValidateOptions(options).code(),
            absl::StatusCode::kInvalidArgument);
  options = ClientOptions();
  options.keepalive.keepalive_time = absl::Seconds(30);
  EXPECT_TRUE(ValidateOptions(options).ok());
  options.default_timeout = absl::ZeroDuration();
  EXPECT_EQ(ValidateOptions(options).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace favor::client_internal
