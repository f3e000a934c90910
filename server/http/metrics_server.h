// `GET /metrics` on its own port (9464 by default, as Prometheus
// conventions want): Metrics::SerializeText() served by HttpServer, so that
// idle or slow clients cannot hold up a scrape (docs/http.md).
//
// Why not prometheus-cpp's Exposer: Debian's civetweb starts its threads
// with a fixed 100 KiB stack, and in a process that also loads LibTorch's
// dependencies (OpenBLAS alone has 60 KiB of static TLS, glog 30 KiB) the
// static TLS no longer fits in it, so pthread_create fails with EINVAL and
// the Exposer cannot start ("null context when constructing CivetServer").
#ifndef FAVOR_SERVER_HTTP_METRICS_SERVER_H_
#define FAVOR_SERVER_HTTP_METRICS_SERVER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "server/http/http_server.h"
#include "server/metrics/metrics.h"

namespace favor::http {

class MetricsServer {
 public:
  // The defaults of a metrics port: 9464, one thread (a scrape takes
  // milliseconds), a few connections, tiny requests, 5 s to send one.
  static HttpServer::Options DefaultOptions();

  // Listens and serves. `metrics` must outlive the server. Errors as
  // HttpServer::Create.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Create(
      const HttpServer::Options& options, const metrics::Metrics* metrics);

  int port() const { return server_->port(); }

  // Implementation details follow.
 private:
  class MetricsHandler : public Handler {
   public:
    explicit MetricsHandler(const metrics::Metrics* metrics)
        : metrics_(metrics) {}
    Admission Accept(const RequestHeader& header) override;

   private:
    void Serve(const Request& request, Responder respond) const;

    const metrics::Metrics* const metrics_;
  };

  explicit MetricsServer(const metrics::Metrics* metrics) : handler_(metrics) {}

  MetricsHandler handler_;
  std::unique_ptr<HttpServer> server_;  // last: stopped first
};

}  // namespace favor::http

#endif  // FAVOR_SERVER_HTTP_METRICS_SERVER_H_
