#include "client/cli/connection.h"

#include <cstdio>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::cli {
namespace {

using ::testing::HasSubstr;

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(ConnectionTest, DefaultsArePlaintextWithTheDeadline) {
  ConnectionSettings settings;
  settings.endpoints = {"127.0.0.1:1", "127.0.0.1:2"};
  settings.deadline = absl::Milliseconds(1500);
  settings.max_attempts = 1;
  auto options = ToClientOptions(settings);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->endpoints, settings.endpoints);
  EXPECT_FALSE(options->tls.enabled);
  EXPECT_EQ(options->default_timeout, absl::Milliseconds(1500));
  EXPECT_EQ(options->retry.max_attempts, 1);
  EXPECT_TRUE(options->bearer_token.empty());
}

TEST(ConnectionTest, TokenFileAndTlsFilesAreRead) {
  ConnectionSettings settings;
  settings.bearer_token_file = WriteTemp("token", "  secret-token \nrest\n");
  settings.tls_roots_file = WriteTemp("roots.pem", "ROOTS");
  settings.tls_server_name = "favor.test";
  auto options = ToClientOptions(settings);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->bearer_token, "secret-token");
  EXPECT_TRUE(options->tls.enabled);
  EXPECT_EQ(options->tls.root_certificates_pem, "ROOTS");
  EXPECT_EQ(options->tls.server_name_override, "favor.test");
}

TEST(ConnectionTest, BadSettingsAreRefused) {
  ConnectionSettings both;
  both.bearer_token = "a";
  both.bearer_token_file = WriteTemp("token2", "b\n");
  EXPECT_EQ(ToClientOptions(both).status().code(),
            absl::StatusCode::kInvalidArgument);

  ConnectionSettings empty_token;
  empty_token.bearer_token_file = WriteTemp("token3", "\n");
  EXPECT_EQ(ToClientOptions(empty_token).status().code(),
            absl::StatusCode::kInvalidArgument);

  ConnectionSettings half_mtls;
  half_mtls.tls_client_cert_file = WriteTemp("cert.pem", "CERT");
  EXPECT_EQ(ToClientOptions(half_mtls).status().code(),
            absl::StatusCode::kInvalidArgument);

  ConnectionSettings missing;
  missing.tls_roots_file = ::testing::TempDir() + "/no-such-roots.pem";
  auto status = ToClientOptions(missing).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("no-such-roots.pem"));

  ConnectionSettings no_deadline;
  no_deadline.deadline = absl::ZeroDuration();
  EXPECT_EQ(ToClientOptions(no_deadline).status().code(),
            absl::StatusCode::kInvalidArgument);

  ConnectionSettings no_endpoint;
  no_endpoint.endpoints.clear();
  EXPECT_EQ(ToClientOptions(no_endpoint).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ConnectionTest, NewClientUsesTheSettingsOrSaysWhyNot) {
  ConnectionSettings settings;
  settings.endpoints = {"127.0.0.1:1", "127.0.0.1:2"};
  absl::StatusOr<std::unique_ptr<Client>> client = NewClient(settings);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ((*client)->options().endpoints, settings.endpoints);
  EXPECT_EQ((*client)->options().default_timeout, settings.deadline);

  settings.max_attempts = 0;
  EXPECT_EQ(NewClient(settings).status().code(),
            absl::StatusCode::kInvalidArgument);
  settings.max_attempts = 1;
  settings.endpoints = {""};  // passes ToClientOptions, not Client::Create
  EXPECT_EQ(NewClient(settings).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace favor::cli
