// An HTTP/1.1 server on Boost.Beast (docs/http.md compares it with
// libmicrohttpd and cpp-httplib), the one HTTP implementation of the
// project: the JSON API (api_handler.h) and /metrics (metrics_server.h) both
// run on it, each on its own port.
//
// Everything is asynchronous on a few threads running one io_context: an
// idle or slow client costs a socket and a buffer, never a thread, and is
// closed when its request has not arrived whole within
// max_request_read_millis (a total, not an inactivity timeout, so a client
// trickling one byte a second is closed too). A handler is given the request
// and a Responder; it may answer at once or later from any thread (a gRPC
// completion callback), so no thread waits on a computation.
//
// Limits, each an Options field: connections (more are closed at accept),
// header bytes (431), body bytes (413, refused from the Content-Length
// before any body byte is read; nothing is allocated for a length merely
// claimed, request_body.h), the time to send a request and to take an
// answer. Malformed requests get 400 and the connection is closed. HEAD is
// handed to the handler as GET and answered without the body.
//
// TLS (OpenSSL through asio) when Options.tls has a certificate and key;
// mutual TLS with a client CA file.
#ifndef FAVOR_SERVER_HTTP_HTTP_SERVER_H_
#define FAVOR_SERVER_HTTP_HTTP_SERVER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "boost/beast/http/message.hpp"
#include "boost/beast/http/status.hpp"
#include "boost/beast/http/string_body.hpp"
#include "server/http/client_gone.h"
#include "server/http/request_body.h"

namespace favor::http {

using RequestHeader = boost::beast::http::request_header<>;
using Request = boost::beast::http::request<GrowingStringBody>;
using Response = boost::beast::http::response<boost::beast::http::string_body>;
using Status = boost::beast::http::status;

// A Beast string view (a target, a header's value) as absl's.
inline absl::string_view ViewOf(boost::beast::string_view view) {
  return absl::string_view(view.data(), view.size());
}

// Answers one request. Call it exactly once, from any thread.
using Responder = absl::AnyInvocable<void(Response)>;

// A response with `status`, `content_type` and `body` (Content-Length set).
Response MakeResponse(Status status, absl::string_view content_type,
                      std::string body);

// What handles one request, made from its header (Handler::Accept): what
// the header decided travels with it to the body.
class Exchange {
 public:
  virtual ~Exchange() = default;

  // The whole request; it and the exchange stay valid until `respond` is
  // called. `client_gone` is signalled if the connection closes before the
  // answer is written (the client gave up), so that work done only for it
  // can stop; `respond` must still be called.
  virtual void Handle(const Request& request, Responder respond,
                      std::shared_ptr<ClientGone> client_gone) = 0;
};

// An Exchange that calls `handle`, for handlers that check nothing in the
// header.
using HandleFunction = absl::AnyInvocable<void(const Request&, Responder,
                                               std::shared_ptr<ClientGone>)>;
std::unique_ptr<Exchange> MakeExchange(HandleFunction handle);

// What the application does with requests; must be thread-safe (it is
// called on every server thread) and outlive the server.
class Handler {
 public:
  // A response refuses the request without reading its body (the
  // connection is closed after it); an exchange reads on and handles it.
  using Admission = std::variant<Response, std::unique_ptr<Exchange>>;

  virtual ~Handler() = default;

  // Called once a request's header is in, before its body is read.
  virtual Admission Accept(const RequestHeader& header) = 0;

  // The answer to a request the server refuses by itself (400 malformed,
  // 413 body too large, 431 header too large). Plain text by default.
  virtual Response Refuse(Status status, absl::string_view message);

  // The two above with the client's address ("127.0.0.1:41234",
  // "[::1]:41234"; empty when unknown), which the server calls; by default
  // they drop it.
  virtual Admission AcceptFrom(const RequestHeader& header,
                               absl::string_view /*peer*/) {
    return Accept(header);
  }
  virtual Response RefuseFrom(Status status, absl::string_view message,
                              absl::string_view /*peer*/) {
    return Refuse(status, message);
  }
};

class HttpServer {
 public:
  struct TlsFiles {
    // PEM files; cert_file and key_file both set: TLS, else plaintext.
    std::string cert_file;
    std::string key_file;
    // Set: clients must present a certificate signed by these CAs.
    std::string client_ca_file;
  };

  struct Options {
    // A numeric address ("127.0.0.1", "0.0.0.0", "::").
    std::string bind_address = "127.0.0.1";
    // 0 lets the kernel pick a free port, which port() reports.
    int port = 8080;
    // Threads running the event loop. Handlers must not block, so a few
    // serve thousands of connections.
    int num_threads = 2;
    // Open connections; one more is closed as soon as it is accepted.
    int max_connections = 1024;
    // Request line and header fields together; over it: 431.
    int64_t max_header_bytes = 16 << 10;
    // Body, after any chunked decoding; over it: 413, before any body byte
    // is read when Content-Length says so.
    int64_t max_body_bytes = int64_t{32} << 20;
    // From the moment the server waits for a request (a new connection or
    // the end of the previous answer) until the request is in whole,
    // keep-alive idle time included; past it the connection is closed.
    absl::Duration max_request_read_time = absl::Seconds(10);
    // How long a client may take to read an answer.
    absl::Duration max_response_write_time = absl::Seconds(30);
    TlsFiles tls;
  };

  // Listens and starts the threads. `handler` must outlive the server.
  // INVALID_ARGUMENT names a bad option or TLS file, UNAVAILABLE an address
  // that cannot be listened on.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Create(
      const Options& options, Handler* handler);

  // Shutdown(absl::ZeroDuration()).
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;

  // Stops accepting, waits up to `grace` for the requests being handled to
  // be answered, then closes every connection and joins the threads.
  // Answers given later are dropped. Idempotent.
  void Shutdown(absl::Duration grace);

  // Implementation details follow.
  struct Core;

 private:
  explicit HttpServer(std::shared_ptr<Core> core);
  std::shared_ptr<Core> core_;
};

}  // namespace favor::http

#endif  // FAVOR_SERVER_HTTP_HTTP_SERVER_H_
