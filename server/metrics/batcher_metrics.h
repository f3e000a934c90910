// Feeds one model's Batcher events into Metrics: the adapter between the
// batching library's observer hooks and the Prometheus families, kept out of
// favor_metrics so that neither library depends on the other.
#ifndef FAVOR_SERVER_METRICS_BATCHER_METRICS_H_
#define FAVOR_SERVER_METRICS_BATCHER_METRICS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/batching/batcher_observer.h"
#include "server/batching/request.h"
#include "server/metrics/metrics.h"

namespace favor::metrics {

// Records, under the model's label: the requests waiting (favor_queue_depth,
// up as one is queued, down as it leaves the queue); every dequeued
// request's queue duration (including those dropped for their deadline or
// cancellation, since their wait is what went wrong); every batch's compute
// duration and size; and, for batches that succeeded, their tokens as
// processed.
// Thread-safe, as BatcherObserver requires. One per Batcher (a Batcher
// serves one model); `metrics` must outlive it.
class BatcherMetrics final : public batching::BatcherObserver {
 public:
  BatcherMetrics(Metrics* metrics, absl::string_view model);

  void OnEnqueued(const batching::Request& request) override;
  void OnDequeued(const batching::Request& request,
                  absl::Duration queue_duration,
                  absl::StatusCode code) override;
  void OnBatchRun(int worker_index, int64_t num_requests, int64_t num_tokens,
                  absl::Duration compute_duration,
                  const absl::Status& status) override;

 private:
  Metrics* const metrics_;
  const std::string model_;
};

}  // namespace favor::metrics

#endif  // FAVOR_SERVER_METRICS_BATCHER_METRICS_H_
