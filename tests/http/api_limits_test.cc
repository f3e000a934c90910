// The HTTP server's limits in front of the API (api_fixture.h): body and
// header bytes, a Content-Length that lies, connections, idle and slow
// clients beside real work, and TLS with bearer tokens, each while the
// server keeps serving.
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/write.hpp"
#include "gtest/gtest.h"
#include "server/http/metrics_server.h"
#include "tests/http/api_fixture.h"
#include "tests/metrics/scrape.h"

#ifndef FAVOR_TEST_CERTS_SCRIPT
#error "FAVOR_TEST_CERTS_SCRIPT must name make_test_certs.sh"
#endif

namespace favor::http {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;

// Sockets held open to a port, sending nothing or half a request line.
class IdleClients {
 public:
  IdleClients(int port, int count) {
    const tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"),
                                 static_cast<unsigned short>(port));
    for (int i = 0; i < count; ++i) {
      sockets_.emplace_back(io_).connect(endpoint);
      if (i % 2 == 1) {
        net::write(sockets_.back(), net::buffer(std::string("POST /v1/emb")));
      }
    }
  }

 private:
  net::io_context io_;
  std::vector<tcp::socket> sockets_;
};

TEST_F(ApiTest, ABodyOverTheLimitIs413) {
  HttpServer::Options http;
  http.max_body_bytes = 1024;
  Start(service::FavorService::Options(), http);
  const std::string big =
      absl::StrCat(R"({"input":")", std::string(2000, 'a'), R"("})");
  ExpectError(PostEmbeddings(big), 413);
  ExpectStillServing();
}

TEST_F(ApiTest, AContentLengthThatLiesIsClosedAtTheReadDeadline) {
  HttpServer::Options http;
  http.max_request_read_time = absl::Milliseconds(300);
  Start(service::FavorService::Options(), http);
  testing::FetchOptions options;
  options.method = "POST";
  options.target = "/v1/embeddings";
  options.body = R"({"input":[[1]]})";
  // Claims far more than it sends, within the body limit: nothing is
  // allocated for the claim, and the connection goes at the deadline.
  options.headers = {{"Content-Length", "1000000"}};
  const absl::Time start = absl::Now();
  EXPECT_FALSE(testing::Fetch(port(), options).ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  ExpectStillServing();
}

TEST_F(ApiTest, AHeaderFloodIs431) {
  Start();
  testing::FetchOptions options;
  options.target = "/health";
  for (int i = 0; i < 300; ++i) {
    options.headers.emplace_back(absl::StrCat("X-Flood-", i),
                                 std::string(100, 'x'));
  }
  auto got = testing::Fetch(port(), options);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 431);
  ExpectStillServing();
}

// GET /health with one padding header, its request line and header fields
// (each line with its CRLF, and the blank line) exactly `bytes` long.
testing::FetchOptions HeaderOfBytes(size_t bytes) {
  testing::FetchOptions options;
  options.target = "/health";
  // "GET /health HTTP/1.1\r\n" "Host: 127.0.0.1\r\n" "X-Pad: ...\r\n" "\r\n"
  const size_t fixed = 22 + 17 + 9 + 2;
  options.headers = {{"X-Pad", std::string(bytes - fixed, 'p')}};
  return options;
}

TEST_F(ApiTest, AHeaderOfExactlyTheLimitIsServedAndOneByteMoreIs431) {
  HttpServer::Options http;
  http.max_header_bytes = 512;
  Start(service::FavorService::Options(), http);
  for (size_t bytes : {511, 512}) {
    auto got = testing::Fetch(port(), HeaderOfBytes(bytes));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->status, 200) << bytes << ": " << got->body;
  }
  auto got = testing::Fetch(port(), HeaderOfBytes(513));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 431);
  ExpectStillServing();
}

TEST_F(ApiTest, ConnectionsAtTheLimitAreServedAndOneMoreIsClosed) {
  HttpServer::Options http;
  http.max_connections = 4;
  Start(service::FavorService::Options(), http);
  testing::FetchOptions health;
  health.target = "/health";
  {
    // Three held open: the fourth, the limit's own, is served.
    IdleClients idle(port(), 3);
    absl::SleepFor(absl::Milliseconds(100));
    auto got = testing::Fetch(port(), health);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->status, 200);
  }
  absl::SleepFor(absl::Milliseconds(100));
  {
    IdleClients idle(port(), 4);
    absl::SleepFor(absl::Milliseconds(100));
    testing::FetchOptions options;
    options.target = "/health";
    EXPECT_FALSE(testing::Fetch(port(), options).ok());
  }
  absl::SleepFor(absl::Milliseconds(100));
  ExpectStillServing();
}

// 64 idle connections on the API port and 64 on the metrics port: an
// embedding and a scrape each still take well under a second.
TEST_F(ApiTest, IdleClientsDelayNeitherAnEmbeddingNorAScrape) {
  Start();
  HttpServer::Options options = MetricsServer::DefaultOptions();
  options.port = 0;
  auto metrics = MetricsServer::Create(options, metrics_.get());
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  IdleClients idle_api(port(), 64);
  IdleClients idle_metrics((*metrics)->port(), 64);
  absl::Time start = absl::Now();
  auto got = PostEmbeddings(R"({"input":"the cat sat on the mat"})");
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 200);
  start = absl::Now();
  auto scraped = metrics::scrape::HttpGet((*metrics)->port(), "/metrics");
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  ASSERT_TRUE(scraped.ok()) << scraped.status();
  EXPECT_EQ(scraped->status_code, 200);
}

// Certificates made once, at test time, by tests/service/make_test_certs.sh.
class ApiTlsTest : public ApiTest {
 protected:
  static void SetUpTestSuite() {
    char pattern[] = "/tmp/favor_http_tls_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = new std::string(pattern);
    const std::string command =
        absl::StrCat("sh ", FAVOR_TEST_CERTS_SCRIPT, " ", *dir_);
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  }
  static void TearDownTestSuite() {
    std::system(absl::StrCat("rm -rf ", *dir_).c_str());
    delete dir_;
  }
  static std::string Path(const char* name) {
    return absl::StrCat(*dir_, "/", name);
  }
  static testing::FetchOptions Embeddings() {
    testing::FetchOptions options;
    options.method = "POST";
    options.target = "/v1/embeddings";
    options.body = R"({"input":[[1,2]]})";
    options.tls_ca_file = Path("ca.pem");
    return options;
  }

  static std::string* dir_;
};
std::string* ApiTlsTest::dir_ = nullptr;

TEST_F(ApiTlsTest, HttpsWithBearerTokens) {
  HttpServer::Options http;
  http.tls = {Path("server.pem"), Path("server.key"), ""};
  ApiHandler::Options api;
  api.bearer_tokens = {"tls-token"};
  Start(service::FavorService::Options(), http, api);
  testing::FetchOptions options = Embeddings();
  ExpectError(testing::Fetch(port(), options), 401);
  options.headers = {{"Authorization", "Bearer tls-token"}};
  auto got = testing::Fetch(port(), options);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 200) << got->body;
  options.tls_ca_file.clear();  // plaintext to a TLS port
  EXPECT_FALSE(testing::Fetch(port(), options).ok());
}

TEST_F(ApiTlsTest, MutualTlsNeedsAClientCertificate) {
  HttpServer::Options http;
  http.tls = {Path("server.pem"), Path("server.key"), Path("ca.pem")};
  Start(service::FavorService::Options(), http);
  testing::FetchOptions options = Embeddings();
  EXPECT_FALSE(testing::Fetch(port(), options).ok());
  options.tls_cert_file = Path("client.pem");
  options.tls_key_file = Path("client.key");
  auto got = testing::Fetch(port(), options);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 200) << got->body;
}

TEST(HttpServerTlsOptionsTest, BadFilesAreInvalidArgument) {
  class Nothing : public Handler {
    Admission Accept(const RequestHeader&) override {
      return MakeExchange(
          [](const Request&, Responder respond, std::shared_ptr<ClientGone>) {
            respond(MakeResponse(Status::ok, "text/plain", ""));
          });
    }
  } handler;
  HttpServer::Options options;
  options.port = 0;
  options.tls = {"/nonexistent.pem", "/nonexistent.key", ""};
  EXPECT_EQ(HttpServer::Create(options, &handler).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.tls = {"/nonexistent.pem", "", ""};
  EXPECT_EQ(HttpServer::Create(options, &handler).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace favor::http
