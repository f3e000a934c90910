// favor::Client's transport security and authentication against a real
// FavorService on loopback: the bearer token reaches the server (unary and
// streaming calls), TLS with custom roots (certificates made at test time by
// tests/service/make_test_certs.sh), server name override, mutual TLS, and
// the failures of a wrong CA or a plaintext client.
#include <stdlib.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/cli/read_file.h"
#include "favor/client.h"
#include "glog/logging.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/service/server_credentials.h"
#include "tests/service/test_server.h"

#ifndef FAVOR_TEST_CERTS_SCRIPT
#error "FAVOR_TEST_CERTS_SCRIPT must name make_test_certs.sh"
#endif

namespace favor {
namespace {

using service::FavorService;
using service::testing::FakeModel;
using service::testing::TestServer;
using service::testing::TestServerOptions;

std::string NewTempDir() {
  std::string pattern = ::testing::TempDir() + "favor_client_tls_XXXXXX";
  CHECK(mkdtemp(pattern.data()) != nullptr);
  return pattern;
}

std::unique_ptr<Client> MakeClient(const ClientOptions& options) {
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
  CHECK(client.ok()) << client.status();
  return *std::move(client);
}

class ClientBearerTokenTest : public ::testing::Test {
 protected:
  ClientBearerTokenTest()
      : model_("fake"),
        server_(FavorService::Options(), {&model_},
                TestServerOptions{{"alpha", "beta"}, nullptr, true}) {}

  ClientOptions Options(const std::string& token) {
    ClientOptions options;
    options.endpoints = {absl::StrCat("127.0.0.1:", server_.port())};
    options.bearer_token = token;
    return options;
  }

  FakeModel model_;
  TestServer server_;
};

TEST_F(ClientBearerTokenTest, TheTokenReachesTheServer) {
  std::unique_ptr<Client> client = MakeClient(Options("beta"));
  EXPECT_TRUE(client->Embed({{1, 2}}).ok());
  EXPECT_TRUE(client->ListModels().ok());
  std::unique_ptr<EmbedStreamer> streamer = *client->OpenEmbedStream();
  ASSERT_TRUE(streamer->Send({{3}}).ok());
  std::optional<StreamedEmbedResult> answer = streamer->Next();
  ASSERT_TRUE(answer.has_value());
  EXPECT_TRUE(answer->result.ok()) << answer->result.status();
  EXPECT_TRUE(streamer->Finish().ok());
}

TEST_F(ClientBearerTokenTest, MissingOrWrongTokenIsUnauthenticated) {
  for (const std::string token : {"", "gamma"}) {
    std::unique_ptr<Client> client = MakeClient(Options(token));
    EXPECT_EQ(client->Embed({{1}}).status().code(),
              absl::StatusCode::kUnauthenticated)
        << "token '" << token << "'";
    std::unique_ptr<EmbedStreamer> streamer = *client->OpenEmbedStream();
    absl::StatusOr<uint64_t> sent = streamer->Send({{3}});
    if (sent.ok()) {
      std::optional<StreamedEmbedResult> answer = streamer->Next();
      ASSERT_TRUE(answer.has_value());
      EXPECT_EQ(answer->result.status().code(),
                absl::StatusCode::kUnauthenticated);
    } else {  // the server may have ended the stream before the Send
      EXPECT_EQ(sent.status().code(), absl::StatusCode::kUnauthenticated);
    }
    EXPECT_EQ(streamer->Finish().code(), absl::StatusCode::kUnauthenticated);
    // Health stays open to probes without a token.
    EXPECT_EQ(client->CheckHealth().value_or(ServingStatus::kUnknown),
              ServingStatus::kServing);
  }
  EXPECT_EQ(model_.calls(), 0);
}

// Certificates made once for every TLS test.
class ClientTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(NewTempDir());
    other_dir_ = new std::string(NewTempDir());
    const std::string command =
        absl::StrCat("sh ", FAVOR_TEST_CERTS_SCRIPT, " ", *dir_);
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    // A second CA that signed nothing the server has.
    const std::string other_ca = absl::StrCat(
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "
        "/CN=favor-other-ca -keyout ",
        *other_dir_, "/ca.key -out ", *other_dir_, "/ca.pem 2>/dev/null");
    ASSERT_EQ(std::system(other_ca.c_str()), 0) << other_ca;
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete other_dir_;
  }

  static std::string Path(const char* name) {
    return absl::StrCat(*dir_, "/", name);
  }
  static std::string Pem(const std::string& path) {
    absl::StatusOr<std::string> pem = cli::ReadFile(path);
    CHECK(pem.ok()) << pem.status();
    return *pem;
  }

  static std::unique_ptr<TestServer> StartServer(FakeModel* model,
                                                 bool require_client_cert) {
    service::TlsOptions tls{Path("server.pem"), Path("server.key"),
                            require_client_cert ? Path("ca.pem") : ""};
    auto credentials = service::MakeServerCredentials(tls);
    CHECK(credentials.ok()) << credentials.status();
    return std::make_unique<TestServer>(
        FavorService::Options(), std::vector<const model::Model*>{model},
        TestServerOptions{{}, *credentials, false});
  }

  static ClientOptions TlsOptionsFor(int port) {
    ClientOptions options;
    options.endpoints = {absl::StrCat("127.0.0.1:", port)};
    options.tls.enabled = true;
    options.tls.root_certificates_pem = Pem(Path("ca.pem"));
    options.retry.max_attempts = 1;
    options.default_timeout = absl::Seconds(10);
    return options;
  }

  static std::string* dir_;
  static std::string* other_dir_;
};

std::string* ClientTlsTest::dir_ = nullptr;
std::string* ClientTlsTest::other_dir_ = nullptr;

TEST_F(ClientTlsTest, TlsWithCustomRootsSucceeds) {
  FakeModel model("fake");
  auto server = StartServer(&model, /*require_client_cert=*/false);
  // By address (the certificate names IP:127.0.0.1) ...
  EXPECT_TRUE(MakeClient(TlsOptionsFor(server->port()))->Embed({{1}}).ok());
  // ... and by the name in the certificate, given as an override.
  ClientOptions options = TlsOptionsFor(server->port());
  options.tls.server_name_override = "localhost";
  EXPECT_TRUE(MakeClient(options)->ListModels().ok());
}

TEST_F(ClientTlsTest, WrongRootsOrPlaintextFail) {
  FakeModel model("fake");
  auto server = StartServer(&model, /*require_client_cert=*/false);
  ClientOptions options = TlsOptionsFor(server->port());
  options.tls.root_certificates_pem = Pem(absl::StrCat(*other_dir_, "/ca.pem"));
  EXPECT_EQ(MakeClient(options)->Embed({{1}}).status().code(),
            absl::StatusCode::kUnavailable);
  options.tls = TlsOptions();  // plaintext against a TLS server
  EXPECT_EQ(MakeClient(options)->Embed({{1}}).status().code(),
            absl::StatusCode::kUnavailable);
  options = TlsOptionsFor(server->port());
  options.tls.server_name_override = "not-in-the-certificate.example";
  EXPECT_EQ(MakeClient(options)->Embed({{1}}).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(model.calls(), 0);
}

TEST_F(ClientTlsTest, MutualTlsPresentsTheClientCertificate) {
  FakeModel model("fake");
  auto server = StartServer(&model, /*require_client_cert=*/true);
  ClientOptions options = TlsOptionsFor(server->port());
  EXPECT_NE(MakeClient(options)->Embed({{1}}).status().code(),
            absl::StatusCode::kOk);
  options.tls.client_certificate_pem = Pem(Path("client.pem"));
  options.tls.client_private_key_pem = Pem(Path("client.key"));
  EXPECT_TRUE(MakeClient(options)->Embed({{1}}).ok());
}

}  // namespace
}  // namespace favor
