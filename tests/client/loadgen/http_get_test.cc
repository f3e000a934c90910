// HttpGet against a real server on loopback: a thread that accepts one
// connection at a time, reads the request with Boost.Beast's parser and
// answers with canned bytes (some of them not HTTP at all).
#include "client/loadgen/http_get.h"

#include <atomic>
#include <sstream>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::bench {
namespace {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Serves `reply` to every connection and keeps the last request it read.
class CannedHttpServer {
 public:
  explicit CannedHttpServer(std::string reply)
      : reply_(std::move(reply)),
        acceptor_(io_, {net::ip::make_address("127.0.0.1"), 0}),
        port_(acceptor_.local_endpoint().port()),
        thread_([this] { Serve(); }) {}
  ~CannedHttpServer() {
    stop_.store(true);
    tcp::socket wake(io_);  // unblocks accept()
    beast::error_code ignored;
    wake.connect(acceptor_.local_endpoint(), ignored);
    thread_.join();
  }

  int port() const { return port_; }
  std::string last_request() {
    absl::MutexLock lock(&mu_);
    return last_request_;
  }

 private:
  void Serve() {
    for (;;) {
      tcp::socket client(io_);
      beast::error_code error;
      acceptor_.accept(client, error);
      if (error || stop_.load()) return;
      beast::flat_buffer buffer;
      beast::http::request<beast::http::empty_body> request;
      beast::http::read(client, buffer, request, error);
      std::ostringstream header;
      header << request.base();
      {
        absl::MutexLock lock(&mu_);
        last_request_ = header.str();
      }
      net::write(client, net::buffer(reply_), error);
    }
  }

  const std::string reply_;
  net::io_context io_;
  tcp::acceptor acceptor_;
  const int port_;
  std::atomic<bool> stop_{false};
  absl::Mutex mu_;
  std::string last_request_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // last: starts once the rest is built
};

TEST(HttpGetTest, ReturnsTheBodyOfA200) {
  const std::string body(100000, 'x');  // several reads
  CannedHttpServer server(absl::StrCat(
      "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n", body));
  auto got = HttpGet(absl::StrCat("127.0.0.1:", server.port()), "/metrics");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, body);
  EXPECT_THAT(server.last_request(), StartsWith("GET /metrics HTTP/1.0\r\n"));
  EXPECT_THAT(server.last_request(), HasSubstr("Host: 127.0.0.1\r\n"));
}

TEST(HttpGetTest, ResolvesLocalhost) {
  CannedHttpServer server("HTTP/1.1 200 OK\r\n\r\nhello");
  auto got = HttpGet(absl::StrCat("localhost:", server.port()), "/");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "hello");
}

TEST(HttpGetTest, OtherStatusIsFailedPrecondition) {
  CannedHttpServer server("HTTP/1.0 404 Not Found\r\n\r\nno");
  auto got = HttpGet(absl::StrCat("127.0.0.1:", server.port()), "/metrics");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(got.status().message(), HasSubstr("404 Not Found"));
}

TEST(HttpGetTest, NotHttpIsDataLoss) {
  CannedHttpServer server("SSH-2.0-OpenSSH\r\n");
  auto got = HttpGet(absl::StrCat("127.0.0.1:", server.port()), "/metrics");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
}

TEST(HttpGetTest, NobodyListeningIsUnavailable) {
  int port = 0;
  {
    CannedHttpServer server("");
    port = server.port();
  }  // closed: the port is now refused
  auto got = HttpGet(absl::StrCat("127.0.0.1:", port), "/metrics");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(got.status().message(), HasSubstr("127.0.0.1"));
}

TEST(HttpGetTest, BadAddressesAreInvalidArgument) {
  for (const char* address : {"localhost", "localhost:", ":9464", "host:0",
                              "host:70000", "host:port", "::1:9464"}) {
    EXPECT_EQ(HttpGet(address, "/").status().code(),
              absl::StatusCode::kInvalidArgument)
        << address;
  }
  std::string host;
  std::string port;
  ASSERT_TRUE(SplitHostPort("[::1]:9464", &host, &port).ok());
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, "9464");
}

}  // namespace
}  // namespace favor::bench
