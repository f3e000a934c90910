// Bearer tokens and TLS over real gRPC on loopback. The TLS certificates (a
// throwaway CA, a server and a client certificate) are made at test time by
// make_test_certs.sh with the openssl CLI.
#include <stdlib.h>

#include <cstdlib>
#include <fstream>
#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "server/service/bearer_auth.h"
#include "server/service/server_credentials.h"
#include "tests/service/test_server.h"

#ifndef FAVOR_TEST_CERTS_SCRIPT
#error "FAVOR_TEST_CERTS_SCRIPT must name make_test_certs.sh"
#endif

namespace favor::service {
namespace {

using testing::FakeModel;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::TestServer;
using testing::TestServerOptions;

std::string NewTempDir() {
  std::string pattern = ::testing::TempDir() + "favor_security_XXXXXX";
  CHECK(mkdtemp(pattern.data()) != nullptr);
  return pattern;
}

std::string WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

grpc::Status CallListModels(v1::Favor::Stub& stub,
                            const std::string& authorization = "") {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  if (!authorization.empty()) {
    context.AddMetadata("authorization", authorization);
  }
  v1::ListModelsResponse response;
  return stub.ListModels(&context, v1::ListModelsRequest(), &response);
}

// grpc.health.v1.Health/Check for the whole server, without the generated
// health stub: the request is empty and SERVING encodes as 08 01.
std::string HealthCheck(const std::shared_ptr<grpc::Channel>& channel) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  grpc::Slice empty("");
  grpc::ByteBuffer request(&empty, 1);  // a default ByteBuffer is invalid
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", {}, &request,
                 &response, [&done](grpc::Status s) { done.set_value(s); });
  grpc::Status status = done.get_future().get();
  if (!status.ok()) return absl::StrCat("error ", status.error_code());
  grpc::Slice slice;
  CHECK(response.DumpToSingleSlice(&slice).ok());
  return std::string(reinterpret_cast<const char*>(slice.begin()),
                     slice.size());
}

TEST(ReadBearerTokensTest, SkipsBlankLinesAndComments) {
  const std::string path =
      WriteFile(NewTempDir() + "/tokens", "# ops\n\n  alpha  \n#beta\nbeta\n");
  auto tokens = ReadBearerTokens(path);
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  EXPECT_THAT(*tokens, ::testing::ElementsAre("alpha", "beta"));
}

TEST(ReadBearerTokensTest, FailsWithoutTokenOrFile) {
  const std::string dir = NewTempDir();
  const std::string empty = WriteFile(dir + "/empty", "# none\n\n");
  EXPECT_EQ(ReadBearerTokens(empty).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadBearerTokens(dir + "/missing").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(CheckBearerTokenTest, AcceptsOnlyAConfiguredToken) {
  const std::vector<std::string> tokens = {"alpha", "beta"};
  EXPECT_TRUE(CheckBearerToken("Bearer beta", tokens).ok());
  // The scheme's case does not matter (RFC 9110 11.1); the token's does.
  EXPECT_TRUE(CheckBearerToken("bearer beta", tokens).ok());
  EXPECT_TRUE(CheckBearerToken("BEARER alpha", tokens).ok());
  EXPECT_FALSE(CheckBearerToken("Bearer Beta", tokens).ok());
  EXPECT_THAT(std::string(CheckBearerToken("Basic YTpi", tokens).message()),
              HasSubstr("not 'Bearer <token>'"));
  EXPECT_FALSE(CheckBearerToken("Bearer bet", tokens).ok());
  EXPECT_FALSE(CheckBearerToken("Bearer betaa", tokens).ok());
  EXPECT_FALSE(CheckBearerToken("beta", tokens).ok());
  EXPECT_FALSE(CheckBearerToken("", tokens).ok());
  absl::Status wrong = CheckBearerToken("Bearer s3cret-guess", tokens);
  EXPECT_EQ(wrong.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(wrong.message()), Not(HasSubstr("s3cret-guess")));
}

class BearerAuthTest : public ::testing::Test {
 protected:
  BearerAuthTest()
      : model_("default"),
        server_(FavorService::Options(), {&model_},
                TestServerOptions{{"alpha", "beta"}, nullptr, true}) {}

  FakeModel model_;
  TestServer server_;
};

TEST_F(BearerAuthTest, UnaryCallsNeedAValidToken) {
  EXPECT_EQ(CallListModels(server_.stub()).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  grpc::Status wrong = CallListModels(server_.stub(), "Bearer gamma");
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(wrong.error_message(), Not(HasSubstr("gamma")));
  EXPECT_TRUE(CallListModels(server_.stub(), "Bearer beta").ok());
}

// Every unary method, checked before its request is even looked at (the
// requests are empty, which would otherwise be INVALID_ARGUMENT).
TEST_F(BearerAuthTest, EveryUnaryMethodNeedsAToken) {
  v1::Favor::Stub& stub = server_.stub();
  const auto code = [](auto call) {
    grpc::ClientContext context;
    return call(&context).error_code();
  };
  v1::EmbedResponse embedded;
  EXPECT_EQ(code([&](auto* c) {
              return stub.Embed(c, v1::EmbedRequest(), &embedded);
            }),
            grpc::StatusCode::UNAUTHENTICATED);
  v1::AttendResponse attended;
  EXPECT_EQ(code([&](auto* c) {
              return stub.Attend(c, v1::AttendRequest(), &attended);
            }),
            grpc::StatusCode::UNAUTHENTICATED);
  v1::GetModelResponse model;
  EXPECT_EQ(code([&](auto* c) {
              return stub.GetModel(c, v1::GetModelRequest(), &model);
            }),
            grpc::StatusCode::UNAUTHENTICATED);
  v1::TokenizeResponse tokens;
  EXPECT_EQ(code([&](auto* c) {
              return stub.Tokenize(c, v1::TokenizeRequest(), &tokens);
            }),
            grpc::StatusCode::UNAUTHENTICATED);
}

// The HTTP front checks a request's token at its own edge and calls the
// service in process with the service's in-process key instead, so that
// each call's token is checked once. A wrong key, or the key under another
// name, admits nothing; two services' keys differ.
TEST_F(BearerAuthTest, TheInProcessKeyStandsForAToken) {
  const std::string key = server_.service().in_process_key();
  ASSERT_EQ(key.size(), 32u);
  const auto call = [&](const std::string& name, const std::string& value) {
    grpc::ClientContext context;
    context.AddMetadata(name, value);
    v1::ListModelsResponse response;
    return server_.stub()
        .ListModels(&context, v1::ListModelsRequest(), &response)
        .error_code();
  };
  const std::string metadata(kInProcessKeyMetadata);
  EXPECT_EQ(call(metadata, key), grpc::StatusCode::OK);
  std::string wrong = key;
  wrong[0] = wrong[0] == '0' ? '1' : '0';
  EXPECT_EQ(call(metadata, wrong), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(call(metadata, ""), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(call("authorization", "Bearer " + key),
            grpc::StatusCode::UNAUTHENTICATED);
  FakeModel other_model("default");
  TestServer other(FavorService::Options(), {&other_model},
                   TestServerOptions{{"alpha"}, nullptr, true});
  EXPECT_NE(other.service().in_process_key(), key);
}

TEST_F(BearerAuthTest, StreamWithoutTokenIsUnauthenticated) {
  grpc::ClientContext context;
  auto stream = server_.stub().EmbedStream(&context);
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(BearerAuthTest, HealthNeedsNoToken) {
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_.port()),
                                     grpc::InsecureChannelCredentials());
  EXPECT_EQ(HealthCheck(channel), std::string("\x08\x01", 2));  // SERVING
}

// Certificates made once for all TLS tests.
class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(NewTempDir());
    const std::string command =
        absl::StrCat("sh ", FAVOR_TEST_CERTS_SCRIPT, " ", *dir_);
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  }
  static void TearDownTestSuite() { delete dir_; }

  static std::string Path(const char* name) {
    return absl::StrCat(*dir_, "/", name);
  }

  static std::unique_ptr<TestServer> StartServer(FakeModel* model,
                                                 bool require_client_cert) {
    TlsOptions tls{Path("server.pem"), Path("server.key"),
                   require_client_cert ? Path("ca.pem") : ""};
    auto credentials = MakeServerCredentials(tls);
    CHECK(credentials.ok()) << credentials.status();
    return std::make_unique<TestServer>(
        FavorService::Options(), std::vector<const model::Model*>{model},
        TestServerOptions{{}, *credentials, false});
  }

  // A TLS client that trusts the test CA, with the client certificate or
  // without.
  static std::unique_ptr<v1::Favor::Stub> TlsStub(int port, bool client_cert) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ReadFile(Path("ca.pem"));
    if (client_cert) {
      ssl.pem_private_key = ReadFile(Path("client.key"));
      ssl.pem_cert_chain = ReadFile(Path("client.pem"));
    }
    return v1::Favor::NewStub(grpc::CreateChannel(
        absl::StrCat("localhost:", port), grpc::SslCredentials(ssl)));
  }

  static std::string* dir_;
};

std::string* TlsTest::dir_ = nullptr;

TEST_F(TlsTest, TlsClientSucceedsAndPlaintextClientFails) {
  FakeModel model("default");
  auto server = StartServer(&model, /*require_client_cert=*/false);
  EXPECT_TRUE(CallListModels(*TlsStub(server->port(), false)).ok());
  EXPECT_EQ(CallListModels(*server->NewStub()).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

TEST_F(TlsTest, RequiredClientCertificateIsChecked) {
  FakeModel model("default");
  auto server = StartServer(&model, /*require_client_cert=*/true);
  EXPECT_NE(CallListModels(*TlsStub(server->port(), false)).error_code(),
            grpc::StatusCode::OK);
  EXPECT_TRUE(CallListModels(*TlsStub(server->port(), true)).ok());
}

TEST_F(TlsTest, MissingFilesAndHalfConfigurationsFail) {
  EXPECT_EQ(MakeServerCredentials({Path("nope.pem"), Path("server.key"), ""})
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(MakeServerCredentials({Path("server.pem"), "", ""}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeServerCredentials({"", "", Path("ca.pem")}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(MakeServerCredentials({}).ok());
}

}  // namespace
}  // namespace favor::service
