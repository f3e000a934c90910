// The server's Prometheus metrics and their HTTP endpoint (`/metrics` on its
// own port, 9464 by default). The families and their names are in
// metric_names.h, the bucket bounds in buckets.h.
//
// Families and the per-model series are built once, in Create(). Series
// keyed by (model, method, code) are created the first time a combination
// occurs and then kept, so that a steady server never calls prometheus-cpp's
// Family::Add() on the request path and exports no series for combinations
// that never happened; the exception is code OK for every served model and
// method, exported at zero from the start so that rate() counts first calls.
// Label values are bounded: a model or method that was not registered in
// Options is recorded as "(other)", calls without a model as "(none)", and
// codes are the 17 gRPC codes.
//
// Recording is thread-safe and cheap (a hash lookup of the model name and a
// short mutex inside prometheus-cpp's metric); call it from any thread.
//
// No LibTorch, gRPC or batching dependency: the service, the batcher (through
// BatcherMetrics, batcher_metrics.h) and the model feed it.
#ifndef FAVOR_SERVER_METRICS_METRICS_H_
#define FAVOR_SERVER_METRICS_METRICS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace prometheus {
class Counter;
class Exposer;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace favor::metrics {

class Metrics {
 public:
  // The five Favor RPCs (metric_names.h), Options.methods' default.
  static std::vector<std::string> DefaultMethods();

  struct Options {
    // Address the HTTP endpoint listens on: "0.0.0.0" (every IPv4
    // interface), "127.0.0.1", a host name. IPv6 addresses (written without
    // brackets) work only with a civetweb built with IPv6; Debian bookworm's
    // is not, and refuses them with UNAVAILABLE.
    std::string bind_address = "0.0.0.0";
    // Port of `/metrics`; 0 lets the kernel pick a free one, which port()
    // then reports. 0 to 65535.
    int port = 9464;
    // False: no HTTP endpoint at all (tools, unit tests); SerializeText()
    // still gives the exposition.
    bool serve_http = true;
    // civetweb threads answering scrapes. Scrapes come every few seconds
    // at most; two keep one slow scraper from blocking another. At least 1.
    int num_http_threads = 2;
    // Names allowed as `model` label values: the server's models. Anything
    // else is recorded as "(other)".
    std::vector<std::string> models;
    // Names allowed as `method` label values; anything else is "(other)".
    std::vector<std::string> methods = DefaultMethods();
  };

  // Builds every family and per-model series, then (with serve_http) starts
  // the HTTP endpoint. INVALID_ARGUMENT names a bad option; UNAVAILABLE
  // names the address when it cannot be listened on (e.g. port in use).
  static absl::StatusOr<std::unique_ptr<Metrics>> Create(
      const Options& options);

  // Stops the endpoint first. That takes up to 2 s: civetweb's accept loop
  // notices the stop request only when its 2 s poll times out.
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // The port `/metrics` listens on (the chosen one when Options.port was
  // 0); 0 without serve_http.
  int port() const { return port_; }

  // One answered call: `duration` from its start to its answer. An empty
  // `model` means the call used none (recorded as "(none)").
  void RecordRequest(absl::string_view model, absl::string_view method,
                     absl::StatusCode code, absl::Duration duration);
  // One request's wait from admission to the start of its batch.
  void RecordQueue(absl::string_view model, absl::Duration duration);
  // One batch's computation.
  void RecordCompute(absl::string_view model, absl::Duration duration);
  // One batch's size, in requests and in tokens.
  void RecordBatch(absl::string_view model, int64_t num_requests,
                   int64_t num_tokens);
  // One input's length in tokens (after truncation).
  void RecordInputLength(absl::string_view model, int64_t num_tokens);
  // Requests now waiting in the model's queue.
  void SetQueueDepth(absl::string_view model, int64_t num_requests);
  // Tokens computed successfully.
  void AddTokens(absl::string_view model, int64_t num_tokens);
  // Publishes favor_model_info{model, version, kernel, device} = 1,
  // replacing the model's earlier info series. Not for the request path.
  void SetModelInfo(absl::string_view model, absl::string_view version,
                    absl::string_view kernel, absl::string_view device);

  // Counts a call in favor_requests_in_flight{method} while it lives.
  class InFlightGuard {
   public:
    InFlightGuard(InFlightGuard&& other) noexcept;
    InFlightGuard& operator=(InFlightGuard&&) = delete;
    ~InFlightGuard();

   private:
    friend class Metrics;
    explicit InFlightGuard(prometheus::Gauge* gauge);
    prometheus::Gauge* gauge_;  // Null once moved from.
  };
  [[nodiscard]] InFlightGuard TrackInFlight(absl::string_view method);

  // The text exposition format, as a scrape of `/metrics` returns it.
  std::string SerializeText() const;

  // Implementation details follow.
 private:
  struct Families;
  struct ModelSeries;
  struct RequestSeries;

  Metrics();
  absl::Status Build(const Options& options);
  void BuildFamilies();
  absl::Status BuildModelSeries(const Options& options);
  std::unique_ptr<ModelSeries> NewModelSeries(const std::string& label);
  absl::Status StartHttp(const Options& options);
  ModelSeries& SeriesOf(absl::string_view model) const;
  int MethodIndex(absl::string_view method) const;
  // The {model, method, code} series, created on first use; null if
  // prometheus-cpp could not create them.
  const RequestSeries* RequestSeriesOf(ModelSeries& model, int method_index,
                                       int code_index);

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> families_;
  // Built by Create(), read-only afterwards: lookups need no lock.
  absl::flat_hash_map<std::string, std::unique_ptr<ModelSeries>> models_;
  ModelSeries* no_model_ = nullptr;        // "(none)"
  ModelSeries* other_model_ = nullptr;     // "(other)"
  std::vector<std::string> method_names_;  // Last: "(other)".
  absl::flat_hash_map<std::string, int> method_index_;
  std::vector<prometheus::Gauge*> in_flight_;  // By method index.

  absl::Mutex model_info_mutex_;
  absl::flat_hash_map<std::string, prometheus::Gauge*> model_info_
      ABSL_GUARDED_BY(model_info_mutex_);

  // Declared last so that it is destroyed first: no scrape can run while the
  // families go away.
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

}  // namespace favor::metrics

#endif  // FAVOR_SERVER_METRICS_METRICS_H_
