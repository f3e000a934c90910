// The Prometheus implementation of Metrics (metrics.h), which
// Metrics::Create() builds: prometheus-cpp families, their per-model series
// and, with Options.serve_http, civetweb's Exposer serving `/metrics`.
// Internal to favor_metrics: callers hold it as a Metrics.
#ifndef FAVOR_SERVER_METRICS_PROMETHEUS_METRICS_H_
#define FAVOR_SERVER_METRICS_PROMETHEUS_METRICS_H_

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
#include "server/metrics/metrics.h"

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

class HttpSeries;

class PrometheusMetrics final : public Metrics {
 public:
  // See Metrics::Create.
  static absl::StatusOr<std::unique_ptr<PrometheusMetrics>> Create(
      const Options& options);

  ~PrometheusMetrics() override;

  int port() const override { return port_; }
  void RecordRequest(absl::string_view model, absl::string_view method,
                     absl::StatusCode code, absl::Duration duration) override;
  void RecordQueue(absl::string_view model, absl::Duration duration) override;
  void RecordCompute(absl::string_view model, absl::Duration duration) override;
  void RecordTokenization(absl::string_view model,
                          absl::Duration duration) override;
  void RecordBatch(absl::string_view model, int64_t num_requests,
                   int64_t num_tokens) override;
  void RecordInputLength(absl::string_view model, int64_t num_tokens) override;
  void AddQueueDepth(absl::string_view model, int64_t delta) override;
  void AddTokens(absl::string_view model, int64_t num_tokens) override;
  void RecordHttpRequest(absl::string_view route, int status_code,
                         absl::Duration duration) override;
  void SetMemoryBudget(int64_t budget_bytes, int64_t resident_bytes) override;
  void SetMemoryReserved(int64_t reserved_bytes) override;
  void SetModelInfo(const ModelInfoLabels& info) override;
  void ClearModelInfo(absl::string_view model) override;
  void RecordModelLoadFailure(absl::string_view model) override;
  std::string SerializeText() const override;

  // Implementation details follow.
 private:
  struct Families;
  struct ModelSeries;
  struct RequestSeries;

  PrometheusMetrics();
  int StartInFlight(absl::string_view method) override;
  void EndInFlight(int key) override;

  absl::Status Build(const Options& options);
  void BuildFamilies();
  absl::Status BuildModelSeries(const Options& options);
  std::unique_ptr<ModelSeries> NewModelSeries(const std::string& label);
  // Adds `model`'s series, with its OK series of every method that uses a
  // model at zero, unless it has them. May throw what prometheus-cpp
  // throws.
  absl::Status AddModelSeries(const std::string& model)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(models_mutex_);
  // The OK series at zero of the methods that use a model, or (with
  // `model_free`) of the others (kModelFreeMethods).
  absl::Status AddOkSeries(ModelSeries& series, bool model_free);
  absl::Status StartHttp(const Options& options);
  ModelSeries& SeriesOf(absl::string_view model) const;
  int MethodIndex(absl::string_view method) const;
  // The {model, method, code} series, created on first use; null if
  // prometheus-cpp could not create them.
  const RequestSeries* RequestSeriesOf(ModelSeries& model, int method_index,
                                       int code_index);

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> families_;
  // Built by Create(); a model loaded later gets its series when its info
  // is published (SetModelInfo). Series are never removed, so a reference
  // outlives the lock.
  mutable absl::Mutex models_mutex_;
  absl::flat_hash_map<std::string, std::unique_ptr<ModelSeries>> models_
      ABSL_GUARDED_BY(models_mutex_);
  ModelSeries* no_model_ = nullptr;        // "(none)"
  ModelSeries* other_model_ = nullptr;     // "(other)"
  std::vector<std::string> method_names_;  // Last: "(other)".
  absl::flat_hash_map<std::string, int> method_index_;
  std::vector<prometheus::Gauge*> in_flight_;  // By method index.
  prometheus::Gauge* memory_budget_ = nullptr;
  prometheus::Gauge* memory_resident_ = nullptr;
  prometheus::Gauge* memory_reserved_ = nullptr;
  std::unique_ptr<HttpSeries> http_;

  absl::Mutex load_failures_mutex_;
  prometheus::Family<prometheus::Counter>* load_failures_family_ = nullptr;
  absl::flat_hash_map<std::string, prometheus::Counter*> load_failures_
      ABSL_GUARDED_BY(load_failures_mutex_);
  // `model`'s series of favor_model_load_failures_total, made at zero when
  // it has none; null when prometheus-cpp refuses it (logged).
  prometheus::Counter* LoadFailureCounter(absl::string_view model)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(load_failures_mutex_);

  absl::Mutex model_info_mutex_;
  absl::flat_hash_map<std::string, prometheus::Gauge*> model_info_
      ABSL_GUARDED_BY(model_info_mutex_);

  // Declared last so that it is destroyed first: no scrape can run while the
  // families go away.
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

}  // namespace favor::metrics

#endif  // FAVOR_SERVER_METRICS_PROMETHEUS_METRICS_H_
