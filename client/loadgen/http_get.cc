#include "client/loadgen/http_get.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "boost/asio/connect.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"

namespace favor::bench {
namespace {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// One GET through Boost.Beast's client side. The steps are asynchronous
// (Beast's timeouts apply to asynchronous operations only) and run on this
// thread's io_context until done or the timeout.
class Exchange {
 public:
  Exchange(const std::string& host, const std::string& port,
           absl::string_view path, const HttpGetOptions& options)
      : host_(host), port_(port), stream_(io_) {
    request_ = {beast::http::verb::get,
                beast::string_view(path.data(), path.size()), 10};
    request_.set(beast::http::field::host, host);
    request_.set(beast::http::field::accept, "text/plain");
    request_.set(beast::http::field::connection, "close");
    parser_.body_limit(options.max_body_bytes);
    stream_.expires_after(absl::ToChronoNanoseconds(options.timeout));
  }

  // The error of the first step that failed; timeout when the exchange did
  // not finish in time. step() names the step.
  beast::error_code Run(absl::Duration timeout) {
    error_ = beast::error::timeout;
    step_ = "cannot resolve";
    resolver_.async_resolve(
        host_, port_, [this](beast::error_code error, auto endpoints) {
          if (error) return Finish(error);
          step_ = "cannot connect to";
          stream_.async_connect(
              endpoints, [this](beast::error_code e, const tcp::endpoint&) {
                if (e) return Finish(e);
                Send();
              });
        });
    io_.run_for(absl::ToChronoNanoseconds(timeout));
    return error_;
  }

  const beast::http::response<beast::http::string_body>& response() {
    return parser_.get();
  }
  const char* step() const { return step_; }

 private:
  void Send() {
    step_ = "writing to";
    beast::http::async_write(
        stream_, request_, [this](beast::error_code error, size_t) {
          if (error) return Finish(error);
          step_ = "reading from";
          beast::http::async_read(
              stream_, buffer_, parser_,
              [this](beast::error_code e, size_t) { Finish(e); });
        });
  }
  void Finish(beast::error_code error) {
    error_ = error;
    io_.stop();
  }

  const std::string host_;
  const std::string port_;
  net::io_context io_;
  tcp::resolver resolver_{io_};
  beast::tcp_stream stream_;
  beast::http::request<beast::http::empty_body> request_;
  beast::flat_buffer buffer_;
  beast::http::response_parser<beast::http::string_body> parser_;
  beast::error_code error_;
  const char* step_ = "";
};

// A failure of the exchange as a Status: parse errors are DATA_LOSS (the
// peer does not speak HTTP, or its answer is over the limit), the rest
// UNAVAILABLE.
absl::Status ExchangeError(beast::error_code error, absl::string_view step,
                           absl::string_view address) {
  const bool parse_error =
      error.category() ==
          beast::http::make_error_code(beast::http::error::bad_version)
              .category() &&
      error != beast::http::error::end_of_stream;
  if (parse_error) {
    return absl::DataLossError(
        absl::StrCat("answer from ", address,
                     " is not HTTP or too long: ", error.message()));
  }
  return absl::UnavailableError(
      absl::StrCat(step, " ", address, ": ", error.message()));
}

}  // namespace

absl::Status SplitHostPort(absl::string_view address, std::string* host,
                           std::string* port) {
  const size_t colon = address.rfind(':');
  absl::string_view host_part;
  if (colon != absl::string_view::npos) host_part = address.substr(0, colon);
  const bool bracketed = absl::ConsumePrefix(&host_part, "[") &&
                         absl::ConsumeSuffix(&host_part, "]");
  int port_number = 0;
  if (colon == absl::string_view::npos || host_part.empty() ||
      (!bracketed && absl::StrContains(host_part, ':')) ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port_number) ||
      port_number < 1 || port_number > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "address '", address, "' is not HOST:PORT (or [IPv6]:PORT)"));
  }
  *host = std::string(host_part);
  *port = std::string(address.substr(colon + 1));
  return absl::OkStatus();
}

absl::StatusOr<std::string> HttpGet(absl::string_view address,
                                    absl::string_view path,
                                    const HttpGetOptions& options) {
  std::string host;
  std::string port;
  absl::Status split = SplitHostPort(address, &host, &port);
  if (!split.ok()) return split;
  Exchange exchange(host, port, path, options);
  const beast::error_code error = exchange.Run(options.timeout);
  if (error) return ExchangeError(error, exchange.step(), address);
  const auto& response = exchange.response();
  if (response.result_int() != 200) {
    return absl::FailedPreconditionError(
        absl::StrCat(address, " answered 'HTTP/", response.version() / 10, ".",
                     response.version() % 10, " ", response.result_int(), " ",
                     std::string(response.reason()), "'"));
  }
  return response.body();
}

}  // namespace favor::bench
