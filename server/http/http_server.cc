#include "server/http/http_server.h"

#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "boost/asio/strand.hpp"
#include "glog/logging.h"
#include "server/common/status_macros.h"
#include "server/http/server_core.h"
#include "server/http/session.h"

namespace favor::http {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;

absl::Status CheckOptions(const HttpServer::Options& options) {
  if (options.port < 0 || options.port > 65535 || options.num_threads < 1 ||
      options.max_connections < 1 || options.max_header_bytes < 256 ||
      options.max_header_bytes > (int64_t{1} << 30) ||
      options.max_body_bytes < 0 ||
      options.max_request_read_time <= absl::ZeroDuration() ||
      options.max_response_write_time <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "HttpServer::Options: port in [0, 65535], num_threads >= 1, "
        "max_connections >= 1, max_header_bytes in [256, 2^30], "
        "max_body_bytes >= 0 and positive timeouts");
  }
  if (options.tls.cert_file.empty() != options.tls.key_file.empty() ||
      (options.tls.cert_file.empty() && !options.tls.client_ca_file.empty())) {
    return absl::InvalidArgumentError(
        "HTTP TLS needs both a certificate and a key file (and a client CA "
        "file only with them)");
  }
  return absl::OkStatus();
}

// asio reports bad files by throwing; caught here and named.
absl::StatusOr<ssl::context> TlsContext(const HttpServer::TlsFiles& files) {
  try {
    ssl::context context(ssl::context::tls_server);
    context.set_options(ssl::context::default_workarounds |
                        ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                        ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    context.use_certificate_chain_file(files.cert_file);
    context.use_private_key_file(files.key_file, ssl::context::pem);
    if (!files.client_ca_file.empty()) {
      context.load_verify_file(files.client_ca_file);
      context.set_verify_mode(ssl::verify_peer |
                              ssl::verify_fail_if_no_peer_cert);
    }
    return context;
  } catch (const std::exception& error) {
    return absl::InvalidArgumentError(absl::StrCat(
        "HTTP TLS: cannot use ", files.cert_file, ", ", files.key_file, " or '",
        files.client_ca_file, "': ", error.what()));
  }
}

absl::Status Listen(HttpServer::Core& core) {
  const HttpServer::Options& options = core.options;
  boost::system::error_code error;
  const net::ip::address address =
      net::ip::make_address(options.bind_address, error);
  if (error) {
    return absl::InvalidArgumentError(
        absl::StrCat("HTTP: '", options.bind_address,
                     "' is not a numeric IPv4 or IPv6 address"));
  }
  const tcp::endpoint endpoint(address,
                               static_cast<unsigned short>(options.port));
  core.acceptor.open(endpoint.protocol(), error);
  if (!error) core.acceptor.set_option(net::socket_base::reuse_address(true));
  if (!error) core.acceptor.bind(endpoint, error);
  if (!error)
    core.acceptor.listen(net::socket_base::max_listen_connections, error);
  if (error) {
    return absl::UnavailableError(
        absl::StrCat("HTTP: cannot listen on ", options.bind_address, ":",
                     options.port, ": ", error.message()));
  }
  core.port = core.acceptor.local_endpoint().port();
  return absl::OkStatus();
}

void StartSession(HttpServer::Core& core, tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
  if (core.tls.has_value()) {
    std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(
        beast::ssl_stream<beast::tcp_stream>(std::move(stream), *core.tls),
        &core)
        ->Start();
  } else {
    std::make_shared<Session<beast::tcp_stream>>(std::move(stream), &core)
        ->Start();
  }
}

// Each connection gets a strand of its own, so its handlers never run
// concurrently while different connections run on every thread.
void Accept(HttpServer::Core& core) {
  core.acceptor.async_accept(
      net::make_strand(core.io),
      [&core](boost::system::error_code error, tcp::socket socket) {
        if (error == net::error::operation_aborted) return;  // shut down
        if (!error) {
          if (core.connections.load() >= core.options.max_connections) {
            socket.close(error);
          } else {
            StartSession(core, std::move(socket));
          }
        }
        Accept(core);
      });
}

}  // namespace

Response MakeResponse(Status status, absl::string_view content_type,
                      std::string body) {
  Response response(status, 11);
  response.set(beast::http::field::content_type,
               beast::string_view(content_type.data(), content_type.size()));
  response.body() = std::move(body);
  response.prepare_payload();
  return response;
}

namespace {

class FunctionExchange final : public Exchange {
 public:
  explicit FunctionExchange(HandleFunction handle)
      : handle_(std::move(handle)) {}
  void Handle(const Request& request, Responder respond,
              std::shared_ptr<ClientGone> client_gone) override {
    handle_(request, std::move(respond), std::move(client_gone));
  }

 private:
  HandleFunction handle_;
};

}  // namespace

std::unique_ptr<Exchange> MakeExchange(HandleFunction handle) {
  return std::make_unique<FunctionExchange>(std::move(handle));
}

Response Handler::Refuse(Status status, absl::string_view message) {
  return MakeResponse(status, "text/plain; charset=utf-8",
                      absl::StrCat(message, "\n"));
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Create(
    const Options& options, Handler* handler) {
  RETURN_IF_ERROR(CheckOptions(options));
  auto core = std::make_shared<Core>(options, handler);
  if (!options.tls.cert_file.empty()) {
    ASSIGN_OR_RETURN(ssl::context context, TlsContext(options.tls));
    core->tls.emplace(std::move(context));
  }
  RETURN_IF_ERROR(Listen(*core));
  Accept(*core);
  for (int i = 0; i < options.num_threads; ++i) {
    core->threads.emplace_back([io = &core->io] { io->run(); });
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(core)));
}

HttpServer::HttpServer(std::shared_ptr<Core> core) : core_(std::move(core)) {}

HttpServer::~HttpServer() { Shutdown(absl::ZeroDuration()); }

int HttpServer::port() const { return core_->port; }

void HttpServer::Shutdown(absl::Duration grace) {
  if (core_ == nullptr) return;
  core_->stopped.store(true);
  net::post(core_->acceptor.get_executor(), [core = core_.get()] {
    boost::system::error_code ignored;
    core->acceptor.close(ignored);
  });
  const bool answered = core_->in_flight.DrainAndClose(grace);
  core_->io.stop();
  for (std::thread& thread : core_->threads) thread.join();
  if (!answered) {
    // A handler still holds a connection, which must not outlive the event
    // loop it belongs to: keep both, rather than crash when it answers.
    LOG(WARNING) << "event=http_shutdown_unanswered port=" << core_->port;
    new std::shared_ptr<Core>(std::move(core_));
    return;
  }
  // Destroying the event loop destroys the connections it still holds.
  core_.reset();
}

}  // namespace favor::http
