// A minimal HTTP/1.0 endpoint for `GET /metrics`, serving
// Metrics::SerializeText() on its own thread.
//
// Why not prometheus-cpp's Exposer: Debian's civetweb starts its threads
// with a fixed 100 KiB stack, and in a process that also loads LibTorch's
// dependencies (OpenBLAS alone has 60 KiB of static TLS, glog 30 KiB) the
// static TLS no longer fits in it, so pthread_create fails with EINVAL and
// the Exposer cannot start ("null context when constructing CivetServer").
// The metrics tests never see it because they do not link LibTorch. Scrapes
// are rare and small, so one thread answering one connection at a time is
// enough; a client that sends nothing is dropped after a few seconds.
#ifndef FAVOR_SERVER_SERVICE_METRICS_HTTP_SERVER_H_
#define FAVOR_SERVER_SERVICE_METRICS_HTTP_SERVER_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/metrics/metrics.h"

namespace favor::service {

class MetricsHttpServer {
 public:
  struct Options {
    // IPv4 address to listen on ("0.0.0.0": every interface).
    std::string bind_address = "127.0.0.1";
    // 0 lets the kernel pick a free port, which port() reports.
    int port = 9464;
    // How long a client may take to send its request.
    int read_timeout_millis = 5000;
  };

  // Listens and starts the thread. `metrics` must outlive the server.
  // UNAVAILABLE names the address when it cannot be listened on.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Create(
      const Options& options, const metrics::Metrics* metrics);

  ~MetricsHttpServer();  // Stops within about 100 ms.
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  int port() const { return port_; }

  // Implementation details follow.
 private:
  MetricsHttpServer(const Options& options, const metrics::Metrics* metrics,
                    int fd, int port);
  void Loop();
  void Answer(int client) const;

  const Options options_;
  const metrics::Metrics* const metrics_;
  const int fd_;
  const int port_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_METRICS_HTTP_SERVER_H_
