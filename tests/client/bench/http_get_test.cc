// HttpGet against a real HTTP server on loopback: a thread that accepts one
// connection at a time, reads the request and answers with a canned reply.
#include "client/bench/http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::bench {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Serves `reply` to every connection and keeps the last request it read.
class CannedHttpServer {
 public:
  explicit CannedHttpServer(std::string reply) : reply_(std::move(reply)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
              0);
    EXPECT_EQ(listen(fd_, 4), 0);
    socklen_t length = sizeof(address);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~CannedHttpServer() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
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
      const int client = accept(fd_, nullptr, nullptr);
      if (client < 0) return;
      std::string request;
      char buffer[1024];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = recv(client, buffer, sizeof(buffer), 0);
        if (n <= 0) break;
        request.append(buffer, static_cast<size_t>(n));
      }
      {
        absl::MutexLock lock(&mu_);
        last_request_ = request;
      }
      send(client, reply_.data(), reply_.size(), MSG_NOSIGNAL);
      close(client);
    }
  }

  const std::string reply_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  absl::Mutex mu_;
  std::string last_request_ ABSL_GUARDED_BY(mu_);
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
