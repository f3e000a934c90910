#include "server/metrics/batcher_metrics.h"

namespace favor::metrics {

BatcherMetrics::BatcherMetrics(Metrics* metrics, absl::string_view model)
    : metrics_(metrics), model_(model) {}

void BatcherMetrics::OnEnqueued(const batching::Request& request) {
  metrics_->AddQueueDepth(model_, 1);
}

void BatcherMetrics::OnDequeued(const batching::Request& request,
                                absl::Duration queue_duration,
                                absl::StatusCode code) {
  metrics_->RecordQueue(model_, queue_duration);
  metrics_->AddQueueDepth(model_, -1);
}

void BatcherMetrics::OnBatchRun(int worker_index, int64_t num_requests,
                                int64_t num_tokens,
                                absl::Duration compute_duration,
                                const absl::Status& status) {
  metrics_->RecordCompute(model_, compute_duration);
  metrics_->RecordBatch(model_, num_requests, num_tokens);
  if (status.ok()) metrics_->AddTokens(model_, num_tokens);
}

}  // namespace favor::metrics
