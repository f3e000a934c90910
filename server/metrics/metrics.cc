#include "server/metrics/metrics.h"

#include <utility>

#include "server/metrics/metric_names.h"

namespace favor::metrics {
namespace {

class NoopMetrics final : public Metrics {
 public:
  int port() const override { return 0; }
  void RecordRequest(absl::string_view model, absl::string_view method,
                     absl::StatusCode code, absl::Duration duration) override {}
  void RecordQueue(absl::string_view model, absl::Duration duration) override {}
  void RecordCompute(absl::string_view model,
                     absl::Duration duration) override {}
  void RecordTokenization(absl::string_view model,
                          absl::Duration duration) override {}
  void RecordBatch(absl::string_view model, int64_t num_requests,
                   int64_t num_tokens) override {}
  void RecordInputLength(absl::string_view model, int64_t num_tokens) override {
  }
  void AddQueueDepth(absl::string_view model, int64_t delta) override {}
  void AddTokens(absl::string_view model, int64_t num_tokens) override {}
  void SetModelInfo(const ModelInfoLabels& info) override {}
  std::string SerializeText() const override { return ""; }

 private:
  int StartInFlight(absl::string_view method) override { return 0; }
  void EndInFlight(int key) override {}
};

}  // namespace

std::vector<std::string> Metrics::DefaultMethods() {
  std::vector<std::string> methods;
  for (const absl::string_view method : kMethods) methods.emplace_back(method);
  return methods;
}

Metrics* Metrics::Noop() {
  static Metrics* const metrics = new NoopMetrics();
  return metrics;
}

Metrics::InFlightGuard::InFlightGuard(Metrics* metrics, int key)
    : metrics_(metrics), key_(key) {}

Metrics::InFlightGuard::InFlightGuard(InFlightGuard&& other) noexcept
    : metrics_(std::exchange(other.metrics_, nullptr)), key_(other.key_) {}

Metrics::InFlightGuard::~InFlightGuard() {
  if (metrics_ != nullptr) metrics_->EndInFlight(key_);
}

Metrics::InFlightGuard Metrics::TrackInFlight(absl::string_view method) {
  return InFlightGuard(this, StartInFlight(method));
}

}  // namespace favor::metrics
