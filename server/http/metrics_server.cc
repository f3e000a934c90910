#include "server/http/metrics_server.h"

#include <utility>

#include "server/common/status_macros.h"

namespace favor::http {

HttpServer::Options MetricsServer::DefaultOptions() {
  HttpServer::Options options;
  options.port = 9464;
  options.num_threads = 1;
  options.max_connections = 256;
  options.max_header_bytes = 8 << 10;
  options.max_body_bytes = 0;
  options.max_request_read_time = absl::Seconds(5);
  return options;
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Create(
    const HttpServer::Options& options, const metrics::Metrics* metrics) {
  std::unique_ptr<MetricsServer> server(new MetricsServer(metrics));
  ASSIGN_OR_RETURN(server->server_,
                   HttpServer::Create(options, &server->handler_));
  return server;
}

Handler::Admission MetricsServer::MetricsHandler::Accept(
    const RequestHeader& /*header*/) {
  return MakeExchange(
      [this](const Request& request, Responder respond,
             std::shared_ptr<ClientGone> /*client_gone: answered at once*/) {
        Serve(request, std::move(respond));
      });
}

void MetricsServer::MetricsHandler::Serve(const Request& request,
                                          Responder respond) const {
  const boost::beast::string_view target = request.target();
  if (target != "/metrics" && !target.starts_with("/metrics?")) {
    respond(MakeResponse(Status::not_found, "text/plain", "not found\n"));
  } else if (request.method() != boost::beast::http::verb::get) {
    Response refusal =
        MakeResponse(Status::method_not_allowed, "text/plain", "only GET\n");
    refusal.set(boost::beast::http::field::allow, "GET, HEAD");
    respond(std::move(refusal));
  } else {
    respond(MakeResponse(Status::ok, "text/plain; version=0.0.4; charset=utf-8",
                         metrics_->SerializeText()));
  }
}

}  // namespace favor::http
