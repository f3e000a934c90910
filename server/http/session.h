// One connection of HttpServer (internal to http_server.cc), over a plain
// TCP stream or a TLS one. A session reads one request at a time (header,
// then body), hands it to the Handler and writes the answer, then reads the
// next request if both sides keep the connection alive. All of its work
// runs on its strand; a Responder posts the answer there from any thread.
//
// Timeouts are the stream's: one deadline covers waiting for and reading a
// whole request (max_request_read_time), another writing the answer; when
// one passes the stream closes the socket and the pending operation ends
// with beast::error::timeout, which ends the session.
//
// While the handler works on a request, the session peeks at the socket
// (async_receive with message_peek): the end of the stream (or a reset)
// means the client closed the connection without waiting for the answer,
// and the request's ClientGone is signalled. Bytes that arrive instead (a
// pipelined request, a TLS record) are left for the next read, and the
// session stops watching. A client that only shuts its sending side down looks
// the same as one that left (RFC 9112 9.6: a server cannot tell them apart), as
// it does to nginx.
#ifndef FAVOR_SERVER_HTTP_SESSION_H_
#define FAVOR_SERVER_HTTP_SESSION_H_

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "boost/asio/bind_executor.hpp"
#include "boost/asio/post.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "boost/beast/ssl.hpp"
#include "server/http/client_gone.h"
#include "server/http/server_core.h"

namespace favor::http {

namespace beast = boost::beast;

// The answer a Responder owes. Destroyed unanswered (a handler that dropped
// it), it answers 500, so that no connection and no Shutdown waits forever.
class PendingAnswer {
 public:
  explicit PendingAnswer(absl::AnyInvocable<void(Response)> deliver)
      : deliver_(std::move(deliver)) {}
  PendingAnswer(const PendingAnswer&) = delete;
  PendingAnswer& operator=(const PendingAnswer&) = delete;
  ~PendingAnswer() {
    if (deliver_) {
      deliver_(MakeResponse(Status::internal_server_error, "text/plain",
                            "the request was dropped unanswered\n"));
    }
  }
  void Answer(Response response) {
    if (!deliver_) return;
    auto deliver = std::move(deliver_);
    deliver_ = nullptr;
    deliver(std::move(response));
  }

 private:
  absl::AnyInvocable<void(Response)> deliver_;
};

template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(Stream stream, HttpServer::Core* core)
      : stream_(std::move(stream)), core_(core) {
    ++core_->connections;
    beast::error_code error;
    const auto remote = Tcp().socket().remote_endpoint(error);
    if (!error) {
      const std::string address = remote.address().to_string();
      peer_ = remote.address().is_v6()
                  ? absl::StrCat("[", address, "]:", remote.port())
                  : absl::StrCat(address, ":", remote.port());
    }
  }
  ~Session() { --core_->connections; }

  // TLS: handshake first; then the first request.
  void Start();

 private:
  beast::tcp_stream& Tcp() { return beast::get_lowest_layer(stream_); }
  static std::chrono::steady_clock::duration Chrono(absl::Duration d) {
    return absl::ToChronoNanoseconds(d);
  }

  void ReadHeader();
  void OnHeader(beast::error_code error);
  void OnContinueSent(beast::error_code error);
  void ReadBody();
  void OnBody(beast::error_code error);
  // Answers a request the server refuses itself, then closes.
  void Refuse(beast::error_code error);
  void Dispatch();
  // Watches for the client leaving while the answer is pending.
  void WatchForClientGone();
  void OnReadableWhileAnswering(beast::error_code error, size_t bytes);
  void Write(Response response, bool keep_alive);
  void OnWrite(beast::error_code error, bool keep_alive);
  // After a last answer: stops sending and drops what the client still
  // sends for up to a second before closing, so that a client still writing
  // a refused request reads the answer rather than a connection reset.
  void Linger();
  void DropInput();
  void Close();

  Stream stream_;
  HttpServer::Core* const core_;
  std::string peer_;  // the client's address, for the access log
  beast::flat_buffer buffer_;
  std::optional<beast::http::request_parser<GrowingStringBody>> parser_;
  Request request_;
  // What the handler made of request_'s header; handles its body.
  std::unique_ptr<Exchange> exchange_;
  Response response_;
  beast::http::response<beast::http::empty_body> continue_;
  // The request being answered is a HEAD: handled as a GET, answered
  // without the body (its Content-Length kept), RFC 9110 9.3.2.
  bool head_ = false;
  // The version of the request being answered (10 or 11).
  unsigned request_version_ = 11;
  // The request being answered's, while the answer is pending.
  std::shared_ptr<ClientGone> client_gone_;
  // A peek at the socket is outstanding (WatchForClientGone), into this.
  bool watching_ = false;
  std::array<char, 1> peeked_;
  std::array<char, 4096> dropped_;
};

// ---- Implementation ----

template <class Stream>
void Session<Stream>::Start() {
  if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
    ReadHeader();
  } else {
    Tcp().expires_after(Chrono(core_->options.max_request_read_time));
    stream_.async_handshake(
        boost::asio::ssl::stream_base::server,
        [self = this->shared_from_this()](beast::error_code error) {
          if (error) return self->Close();
          self->ReadHeader();
        });
  }
}

template <class Stream>
void Session<Stream>::ReadHeader() {
  parser_.emplace();
  head_ = false;
  parser_->header_limit(
      static_cast<std::uint32_t>(core_->options.max_header_bytes));
  parser_->body_limit(
      static_cast<std::uint64_t>(core_->options.max_body_bytes));
  // One deadline for the whole request, not renewed for the body.
  Tcp().expires_after(Chrono(core_->options.max_request_read_time));
  beast::http::async_read_header(
      stream_, buffer_, *parser_,
      [self = this->shared_from_this()](beast::error_code error,
                                        size_t header_bytes) {
        // Beast's header_limit counts the field lines apart from the
        // request line (and per read), so a header up to about the request
        // line longer than the limit passes it; the bytes the parser took
        // hold the limit exactly.
        if (!error && header_bytes > static_cast<size_t>(
                                         self->core_->options.max_header_bytes)) {
          error = beast::http::error::header_limit;
        }
        self->OnHeader(error);
      });
}

template <class Stream>
void Session<Stream>::OnHeader(beast::error_code error) {
  if (error) return Refuse(error);
  if (parser_->get().method() == beast::http::verb::head) {
    head_ = true;
    parser_->get().method(beast::http::verb::get);
  }
  const RequestHeader& header = parser_->get().base();
  request_version_ = header.version();
  // RFC 9112: an HTTP/1.1 request has exactly one Host (3.2), and a
  // transfer coding the server does not know is a 501 (6.1); Beast's parser
  // reads "gzip, chunked" as chunked.
  const size_t hosts = header.count(beast::http::field::host);
  if (header.version() >= 11 && hosts != 1) {
    return Write(core_->handler->RefuseFrom(
                     Status::bad_request,
                     absl::StrCat("an HTTP/1.1 request has one Host header, "
                                  "not ",
                                  hosts),
                     peer_),
                 false);
  }
  const auto coding = header.find(beast::http::field::transfer_encoding);
  if (coding != header.end() && !beast::iequals(coding->value(), "chunked")) {
    return Write(
        core_->handler->RefuseFrom(
            Status::not_implemented,
            absl::StrCat("Transfer-Encoding '", std::string(coding->value()),
                         "' is not supported (only chunked)"),
            peer_),
        false);
  }
  Handler::Admission admission = core_->handler->AcceptFrom(header, peer_);
  if (auto* refusal = std::get_if<Response>(&admission)) {
    return Write(std::move(*refusal), false);
  }
  exchange_ = std::get<std::unique_ptr<Exchange>>(std::move(admission));
  if (beast::iequals(header[beast::http::field::expect], "100-continue")) {
    continue_ = {beast::http::status::continue_, parser_->get().version()};
    beast::http::async_write(
        stream_, continue_,
        [self = this->shared_from_this()](beast::error_code e, size_t) {
          self->OnContinueSent(e);
        });
    return;
  }
  ReadBody();
}

template <class Stream>
void Session<Stream>::OnContinueSent(beast::error_code error) {
  if (error) return Close();
  ReadBody();
}

template <class Stream>
void Session<Stream>::ReadBody() {
  beast::http::async_read(
      stream_, buffer_, *parser_,
      [self = this->shared_from_this()](beast::error_code error, size_t) {
        self->OnBody(error);
      });
}

template <class Stream>
void Session<Stream>::OnBody(beast::error_code error) {
  if (error) return Refuse(error);
  Tcp().expires_never();
  request_ = parser_->release();
  parser_.reset();
  Dispatch();
}

template <class Stream>
void Session<Stream>::Refuse(beast::error_code error) {
  namespace http = beast::http;
  const bool parse_error =
      error.category() ==
          http::make_error_code(http::error::bad_target).category() &&
      error != http::error::end_of_stream &&
      error != http::error::partial_message;
  if (!parse_error) return Close();  // closed, timed out, reset
  Status status = Status::bad_request;
  if (error == http::error::header_limit) {
    status = Status::request_header_fields_too_large;
  } else if (error == http::error::body_limit) {
    status = Status::payload_too_large;
  }
  Write(core_->handler->RefuseFrom(status, error.message(), peer_), false);
}

template <class Stream>
void Session<Stream>::Dispatch() {
  core_->in_flight.Begin();
  const bool keep_alive = request_.keep_alive();
  auto deliver = [self = this->shared_from_this(),
                  keep_alive](Response response) {
    self->core_->in_flight.End([&] {
      auto executor = self->stream_.get_executor();
      boost::asio::post(executor, [self, keep_alive,
                                   response = std::move(response)]() mutable {
        self->Write(std::move(response), keep_alive);
      });
    });
  };
  auto pending = std::make_shared<PendingAnswer>(std::move(deliver));
  client_gone_ = std::make_shared<ClientGone>();
  exchange_->Handle(
      request_,
      [pending](Response response) { pending->Answer(std::move(response)); },
      client_gone_);
  // Answered at once, the Write is posted behind this: it stops the watch.
  WatchForClientGone();
}

// A peek, not a read: bytes that arrive (a pipelined request) stay in the
// socket for ReadHeader. (Not async_wait and a synchronous peek: a wait may
// complete before the socket is readable, and the peek then blocked the
// strand until the client gave up.)
template <class Stream>
void Session<Stream>::WatchForClientGone() {
  watching_ = true;
  Tcp().socket().async_receive(
      boost::asio::buffer(peeked_), boost::asio::ip::tcp::socket::message_peek,
      boost::asio::bind_executor(stream_.get_executor(),
                                 [self = this->shared_from_this()](
                                     beast::error_code error, size_t bytes) {
                                   self->OnReadableWhileAnswering(error, bytes);
                                 }));
}

template <class Stream>
void Session<Stream>::OnReadableWhileAnswering(beast::error_code error,
                                               size_t bytes) {
  watching_ = false;
  // Answered meanwhile (the peek may have ended before Write cancelled it).
  if (client_gone_ == nullptr) return;
  if (error == boost::asio::error::operation_aborted) return;
  if (!error && bytes > 0) return;  // bytes, not the end: stop watching
  client_gone_->Signal();           // the end of the stream, or a reset
}

template <class Stream>
void Session<Stream>::Write(Response response, bool keep_alive) {
  client_gone_.reset();
  if (watching_) {
    // Ends the peek (operation_aborted); nothing else is pending.
    beast::error_code ignored;
    Tcp().socket().cancel(ignored);
  }
  response_ = std::move(response);
  response_.version(11);
  // A 503 (draining, not serving) closes the connection, so that a pooled
  // client reconnects, to another replica where there is one.
  keep_alive = keep_alive && !core_->stopped.load() &&
               response_.result() != beast::http::status::service_unavailable;
  response_.keep_alive(keep_alive);
  // An HTTP/1.0 client keeps the connection only when told (RFC 9112 9.3).
  if (keep_alive && request_version_ < 11) {
    response_.set(beast::http::field::connection, "keep-alive");
  }
  response_.prepare_payload();
  // Beast says "Content-Length: 0"; RFC 9110 forbids the field on a 204.
  if (response_.result() == beast::http::status::no_content) {
    response_.content_length(boost::none);
  }
  if (head_) {
    const size_t length = response_.body().size();
    response_.body().clear();
    response_.content_length(length);
  }
  Tcp().expires_after(Chrono(core_->options.max_response_write_time));
  beast::http::async_write(stream_, response_,
                           [self = this->shared_from_this(), keep_alive](
                               beast::error_code error, size_t) {
                             self->OnWrite(error, keep_alive);
                           });
}

template <class Stream>
void Session<Stream>::OnWrite(beast::error_code error, bool keep_alive) {
  request_ = {};
  exchange_.reset();
  response_ = {};
  if (error) return Close();
  if (!keep_alive) return Linger();
  ReadHeader();
}

template <class Stream>
void Session<Stream>::Linger() {
  beast::error_code ignored;
  Tcp().socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
  Tcp().expires_after(std::chrono::seconds(1));
  DropInput();
}

template <class Stream>
void Session<Stream>::DropInput() {
  Tcp().async_read_some(
      boost::asio::buffer(dropped_),
      [self = this->shared_from_this()](beast::error_code error, size_t) {
        if (error) return self->Close();  // end of input, or the second
        self->DropInput();
      });
}

template <class Stream>
void Session<Stream>::Close() {
  beast::error_code ignored;
  Tcp().socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
  Tcp().close();
}

}  // namespace favor::http

#endif  // FAVOR_SERVER_HTTP_SESSION_H_
