// HTTP/1.x as RFC 9110 and 9112 ask it of a server (server/http/session.h,
// api_errors.cc), on raw connections so that a request can lack what every
// library adds: an HTTP/1.0 keep-alive is announced, an HTTP/1.1 request
// without exactly one Host is a 400, an unknown transfer coding is a 501
// (not ignored), a 401 names the Bearer scheme in WWW-Authenticate, and a
// 503 closes its connection rather than leave it pooled.
#include <string>

#include "absl/strings/str_cat.h"
#include "boost/asio/connect.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/http/read.hpp"
#include "boost/beast/http/string_body.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/http/api_fixture.h"

namespace favor::http {
namespace {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using ::testing::HasSubstr;

class ApiProtocolTest : public ApiTest {
 protected:
  tcp::socket Connect() {
    tcp::socket socket(io_);
    socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"),
                                 static_cast<unsigned short>(port())));
    return socket;
  }

  // Sends `bytes` and reads one answer.
  bhttp::response<bhttp::string_body> Exchange(tcp::socket& socket,
                                               const std::string& bytes) {
    net::write(socket, net::buffer(bytes));
    bhttp::response<bhttp::string_body> response;
    boost::beast::error_code error;
    bhttp::read(socket, buffer_, response, error);
    EXPECT_FALSE(error) << error.message();
    return response;
  }

  // True when the server closed `socket` (a read ends at once).
  bool Closed(tcp::socket& socket) {
    char byte;
    boost::beast::error_code error;
    socket.read_some(net::buffer(&byte, 1), error);
    return error == net::error::eof || error == net::error::connection_reset;
  }

  net::io_context io_;
  boost::beast::flat_buffer buffer_;
};

constexpr char kHealth10KeepAlive[] =
    "GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";

TEST_F(ApiProtocolTest, AnHttp10KeepAliveIsAnnounced) {
  Start();
  tcp::socket socket = Connect();
  for (int i = 0; i < 2; ++i) {  // the same connection twice
    const auto response = Exchange(socket, kHealth10KeepAlive);
    EXPECT_EQ(response.result_int(), 200);
    EXPECT_EQ(response[bhttp::field::connection], "keep-alive");
  }
  // Without "keep-alive" an HTTP/1.0 connection ends with its answer.
  const auto last = Exchange(socket, "GET /health HTTP/1.0\r\n\r\n");
  EXPECT_EQ(last.result_int(), 200);
  EXPECT_NE(last[bhttp::field::connection], "keep-alive");
  EXPECT_TRUE(Closed(socket));
}

TEST_F(ApiProtocolTest, AnHttp11RequestHasOneHost) {
  Start();
  for (const std::string& hosts :
       {std::string(), std::string("Host: a\r\nHost: b\r\n")}) {
    tcp::socket socket = Connect();
    const auto response = Exchange(
        socket, absl::StrCat("GET /health HTTP/1.1\r\n", hosts, "\r\n"));
    EXPECT_EQ(response.result_int(), 400) << hosts;
    EXPECT_THAT(response.body(),
                HasSubstr("an HTTP/1.1 request has one Host header"));
    EXPECT_TRUE(Closed(socket));
  }
  // HTTP/1.0 needs none.
  tcp::socket socket = Connect();
  EXPECT_EQ(Exchange(socket, "GET /health HTTP/1.0\r\n\r\n").result_int(), 200);
}

TEST_F(ApiProtocolTest, AnUnknownTransferCodingIs501) {
  Start();
  tcp::socket socket = Connect();
  const auto response =
      Exchange(socket,
               "POST /v1/embeddings HTTP/1.1\r\nHost: t\r\nContent-Type: "
               "application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
               "10\r\n{\"input\":[[1]]}\r\n0\r\n\r\n");
  EXPECT_EQ(response.result_int(), 501);
  EXPECT_THAT(response.body(),
              HasSubstr("Transfer-Encoding 'gzip, chunked' is not supported"));
  // Chunked alone is read.
  tcp::socket chunked = Connect();
  const auto read =
      Exchange(chunked,
               "POST /v1/embeddings HTTP/1.1\r\nHost: t\r\nContent-Type: "
               "application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
               "f\r\n{\"input\":[[1]]}\r\n0\r\n\r\n");
  EXPECT_EQ(read.result_int(), 200) << read.body();
}

TEST_F(ApiProtocolTest, A401NamesTheBearerScheme) {
  ApiHandler::Options api;
  api.bearer_tokens = {"secret-token"};
  Start(service::FavorService::Options(), {}, api);
  tcp::socket socket = Connect();
  const auto response =
      Exchange(socket, "GET /v1/models HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(response.result_int(), 401);
  EXPECT_EQ(response[bhttp::field::www_authenticate], "Bearer");
}

// A draining replica's 503 ends the connection: a pooled client reconnects,
// to another replica where there is one.
TEST_F(ApiProtocolTest, A503ClosesTheConnection) {
  Start();
  const std::string embed =
      "POST /v1/embeddings HTTP/1.1\r\nHost: t\r\nContent-Type: "
      "application/json\r\nContent-Length: 15\r\n\r\n{\"input\":[[1]]}";
  tcp::socket socket = Connect();
  EXPECT_EQ(Exchange(socket, embed).result_int(), 200);
  service_->StartDraining();
  const auto response = Exchange(socket, embed);
  EXPECT_EQ(response.result_int(), 503);
  EXPECT_EQ(response[bhttp::field::connection], "close");
  EXPECT_TRUE(Closed(socket));
}

}  // namespace
}  // namespace favor::http
