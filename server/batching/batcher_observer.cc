#include "server/batching/batcher_observer.h"

namespace favor::batching {
namespace {

class NoopBatcherObserver final : public BatcherObserver {
 public:
  void OnEnqueued(const Request& request) override {}
  void OnDequeued(const Request& request, absl::Duration queue_duration,
                  absl::StatusCode code) override {}
  void OnBatchRun(int worker_index, int64_t num_requests, int64_t num_tokens,
                  absl::Duration compute_duration,
                  const absl::Status& status) override {}
};

}  // namespace

BatcherObserver* BatcherObserver::Noop() {
  static BatcherObserver* const observer = new NoopBatcherObserver();
  return observer;
}

}  // namespace favor::batching
