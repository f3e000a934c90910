// What the server records for Prometheus, and the implementations: Create()
// builds the Prometheus one (prometheus_metrics.h) with its HTTP endpoint
// (`/metrics` on its own port, 9464 by default); Noop() is one that records
// nothing, for code run without metrics, so that callers never test for a
// null Metrics. The families and their names are in metric_names.h, the
// bucket bounds in buckets.h.
//
// Prometheus: families and the per-model series are built once, in
// Create(). Series
// keyed by (model, method, code) are created the first time a combination
// occurs and then kept, so that a steady server never calls prometheus-cpp's
// Family::Add() on the request path and exports no series for combinations
// that never happened; the exception is code OK for every served model and
// method, exported at zero from the start so that rate() counts first calls.
// Label values are bounded: a model that was neither registered in Options
// nor published by SetModelInfo (a model loaded after start-up), and a
// method not registered in Options, are recorded as "(other)"; calls without
// a model as "(none)"; codes are the 17 gRPC codes.
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

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace favor::metrics {

class Metrics {
 public:
  // The six Favor RPCs (metric_names.h), Options.methods' default.
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

  // The Prometheus implementation: builds every family and per-model
  // series, then (with serve_http) starts the HTTP endpoint.
  // INVALID_ARGUMENT names a bad option; UNAVAILABLE names the address when
  // it cannot be listened on (e.g. port in use). Destroying it stops the
  // endpoint first, which takes up to 2 s: civetweb's accept loop notices
  // the stop request only when its 2 s poll times out.
  static absl::StatusOr<std::unique_ptr<Metrics>> Create(
      const Options& options);

  // Records nothing, builds no family and serves nothing: what the service
  // and the batcher use when given no Metrics. Process-wide; never
  // destroyed.
  static Metrics* Noop();

  Metrics() = default;
  virtual ~Metrics() = default;
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // The port `/metrics` listens on (the chosen one when Options.port was
  // 0); 0 without serve_http.
  virtual int port() const = 0;

  // One answered call: `duration` from its start to its answer. An empty
  // `model` means the call used none (recorded as "(none)").
  virtual void RecordRequest(absl::string_view model, absl::string_view method,
                             absl::StatusCode code,
                             absl::Duration duration) = 0;
  // One request's wait from admission to the start of its batch.
  virtual void RecordQueue(absl::string_view model,
                           absl::Duration duration) = 0;
  // One batch's computation.
  virtual void RecordCompute(absl::string_view model,
                             absl::Duration duration) = 0;
  // The tokenisation of one call's texts.
  virtual void RecordTokenization(absl::string_view model,
                                  absl::Duration duration) = 0;
  // One batch's size, in requests and in tokens.
  virtual void RecordBatch(absl::string_view model, int64_t num_requests,
                           int64_t num_tokens) = 0;
  // One input's length in tokens (after truncation).
  virtual void RecordInputLength(absl::string_view model,
                                 int64_t num_tokens) = 0;
  // Requests waiting for the model (favor_queue_depth) changed by `delta`:
  // +1 as one is queued, -1 as it starts running or is dropped. Deltas, so
  // that the versions of a model being reloaded add up under its name.
  virtual void AddQueueDepth(absl::string_view model, int64_t delta) = 0;
  // Tokens computed successfully.
  virtual void AddTokens(absl::string_view model, int64_t num_tokens) = 0;
  // One answered HTTP request (favor_http_requests_total{route, code},
  // favor_http_request_duration_seconds{route}); `route` outside
  // kHttpRoutes and codes outside kHttpCodes are "(other)". Records
  // nothing unless overridden.
  virtual void RecordHttpRequest(absl::string_view route, int status_code,
                                 absl::Duration duration) {}
  // The memory budget (--max_memory_bytes): favor_memory_budget_bytes (0:
  // none) and favor_memory_resident_bytes (what it counts once: weights,
  // libraries, the allocator's cache). Records nothing unless overridden.
  virtual void SetMemoryBudget(int64_t budget_bytes, int64_t resident_bytes) {}
  // favor_memory_reserved_bytes: the estimates of the batches in flight,
  // reserved in the budget. Records nothing unless overridden.
  virtual void SetMemoryReserved(int64_t reserved_bytes) {}

  // What favor_model_info says of one model.
  struct ModelInfoLabels {
    std::string model;
    std::string version;
    std::string kernel;  // attention kernel name ("favor+")
    std::string device;  // "cpu", "cuda:0"
    std::string dtype;   // compute dtype ("float32", "bfloat16")
  };
  // Counts one failed load of the model folder `model` in
  // favor_model_load_failures_total{model}. Not for the request path.
  virtual void RecordModelLoadFailure(absl::string_view model) {}

  // Publishes favor_model_info{model, version, kernel, device, dtype} = 1,
  // replacing the model's earlier info series; a model not registered in
  // Options (loaded after start-up) gets its own series from here on. Not
  // for the request path.
  virtual void SetModelInfo(const ModelInfoLabels& info) = 0;
  // Withdraws `model`'s favor_model_info series: it no longer serves. Its
  // counters stay (a counter's past is not taken back). Not for the request
  // path; records nothing unless overridden.
  virtual void ClearModelInfo(absl::string_view model) {}

  // Counts a call in favor_requests_in_flight{method} while it lives.
  class InFlightGuard {
   public:
    InFlightGuard(InFlightGuard&& other) noexcept;
    InFlightGuard& operator=(InFlightGuard&&) = delete;
    ~InFlightGuard();

   private:
    friend class Metrics;
    InFlightGuard(Metrics* metrics, int key);
    Metrics* metrics_;  // Null once moved from.
    int key_;
  };
  [[nodiscard]] InFlightGuard TrackInFlight(absl::string_view method);

  // The text exposition format, as a scrape of `/metrics` returns it.
  virtual std::string SerializeText() const = 0;

  // Implementation details follow.
 private:
  // TrackInFlight's two halves: counts one more call of `method` and
  // returns a key that EndInFlight, run by the guard, gets back.
  virtual int StartInFlight(absl::string_view method) = 0;
  virtual void EndInFlight(int key) = 0;
};

}  // namespace favor::metrics

#endif  // FAVOR_SERVER_METRICS_METRICS_H_
