#include "tests/http/http_client.h"

#include <exception>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "boost/asio/executor_work_guard.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/ssl.hpp"
#include "boost/asio/use_future.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "boost/beast/ssl.hpp"

namespace favor::http::testing {
namespace {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// An event loop on a thread of its own while it lives: Beast's timeouts
// apply to asynchronous operations only, so the exchange is asynchronous and
// waits on futures.
class Loop {
 public:
  Loop() : work_(net::make_work_guard(io_)), thread_([this] { io_.run(); }) {}
  ~Loop() {
    work_.reset();
    io_.stop();
    thread_.join();
  }
  net::io_context& io() { return io_; }

 private:
  net::io_context io_;
  net::executor_work_guard<net::io_context::executor_type> work_;
  std::thread thread_;
};

// Sends the request and reads the answer over `stream`; `buffer` keeps
// what was read past the answer, for the next exchange on the connection.
template <class Stream>
Fetched Exchange(Stream& stream, const FetchOptions& options,
                 beast::flat_buffer& buffer) {
  beast::http::request<beast::http::string_body> request(
      beast::http::string_to_verb(options.method), options.target, 11);
  request.set(beast::http::field::host, "127.0.0.1");
  for (const auto& [name, value] : options.headers) request.set(name, value);
  if (!options.body.empty()) {
    request.body() = options.body;
    // A Content-Length given in `headers` is sent as it is, even when it
    // lies.
    if (request.find(beast::http::field::content_length) == request.end()) {
      request.prepare_payload();
    }
  }
  beast::http::async_write(stream, request, net::use_future).get();
  beast::http::response_parser<beast::http::string_body> parser;
  parser.body_limit(std::uint64_t{1} << 30);
  // An answer to HEAD has a Content-Length but no body.
  parser.skip(request.method() == beast::http::verb::head);
  beast::http::async_read(stream, buffer, parser, net::use_future).get();
  const auto& response = parser.get();
  Fetched fetched;
  fetched.status = response.result_int();
  for (const auto& field : response.base()) {
    absl::StrAppend(&fetched.headers, std::string(field.name_string()), ": ",
                    std::string(field.value()), "\r\n");
  }
  fetched.body = response.body();
  return fetched;
}

Fetched FetchTls(net::io_context& io, const tcp::endpoint& endpoint,
                 const FetchOptions& options) {
  net::ssl::context context(net::ssl::context::tls_client);
  context.load_verify_file(options.tls_ca_file);
  context.set_verify_mode(net::ssl::verify_peer);
  if (!options.tls_cert_file.empty()) {
    context.use_certificate_chain_file(options.tls_cert_file);
    context.use_private_key_file(options.tls_key_file, net::ssl::context::pem);
  }
  beast::ssl_stream<beast::tcp_stream> stream(io, context);
  beast::get_lowest_layer(stream).expires_after(
      absl::ToChronoNanoseconds(options.timeout));
  beast::get_lowest_layer(stream)
      .async_connect(endpoint, net::use_future)
      .get();
  stream.async_handshake(net::ssl::stream_base::client, net::use_future).get();
  beast::flat_buffer buffer;
  return Exchange(stream, options, buffer);
}

}  // namespace

std::string Fetched::Header(absl::string_view name) const {
  for (absl::string_view line : absl::StrSplit(headers, "\r\n")) {
    std::pair<absl::string_view, absl::string_view> field =
        absl::StrSplit(line, absl::MaxSplits(": ", 1));
    if (absl::EqualsIgnoreCase(field.first, name)) {
      return std::string(field.second);
    }
  }
  return "";
}

absl::StatusOr<Fetched> Fetch(int port, const FetchOptions& options) {
  Loop loop;
  net::io_context& io = loop.io();
  const tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"),
                               static_cast<unsigned short>(port));
  try {
    if (!options.tls_ca_file.empty()) return FetchTls(io, endpoint, options);
    beast::tcp_stream stream(io);
    stream.expires_after(absl::ToChronoNanoseconds(options.timeout));
    stream.async_connect(endpoint, net::use_future).get();
    beast::flat_buffer buffer;
    return Exchange(stream, options, buffer);
  } catch (const std::exception& error) {
    return absl::UnavailableError(
        absl::StrCat(options.method, " ", options.target,
                     " on 127.0.0.1:", port, ": ", error.what()));
  }
}

absl::StatusOr<std::vector<Fetched>> FetchInOrder(
    int port, const std::vector<FetchOptions>& requests) {
  Loop loop;
  const tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"),
                               static_cast<unsigned short>(port));
  std::vector<Fetched> answers;
  try {
    beast::tcp_stream stream(loop.io());
    beast::flat_buffer buffer;
    for (const FetchOptions& options : requests) {
      stream.expires_after(absl::ToChronoNanoseconds(options.timeout));
      if (answers.empty()) {
        stream.async_connect(endpoint, net::use_future).get();
      }
      answers.push_back(Exchange(stream, options, buffer));
    }
  } catch (const std::exception& error) {
    return absl::UnavailableError(
        absl::StrCat("exchange ", answers.size() + 1, " of ", requests.size(),
                     " on 127.0.0.1:", port, ": ", error.what()));
  }
  return answers;
}

absl::StatusOr<Fetched> Post(int port, absl::string_view target,
                             std::string body) {
  FetchOptions options;
  options.method = "POST";
  options.target = std::string(target);
  options.headers = {{"Content-Type", "application/json"}};
  options.body = std::move(body);
  return Fetch(port, options);
}

}  // namespace favor::http::testing
