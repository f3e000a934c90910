#include "server/service/unary_call.h"

#include <chrono>
#include <utility>

#include "server/service/status_mapping.h"

namespace favor::service {

UnaryCall::UnaryCall(grpc::CallbackServerContext* context,
                     metrics::Metrics* metrics, absl::string_view method,
                     OpenCalls* open_calls)
    : context_(context),
      metrics_(metrics),
      open_calls_(open_calls),
      accepted_(open_calls->Begin()),
      method_(method),
      start_(absl::Now()),
      in_flight_(metrics->TrackInFlight(method)),
      cancellation_(std::make_shared<batching::CancellationFlag>()) {}

absl::Time UnaryCall::deadline() const { return DeadlineOf(*context_); }

absl::Time DeadlineOf(const grpc::ServerContextBase& context) {
  const std::chrono::system_clock::time_point deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(deadline);
}

void UnaryCall::Answer(const absl::Status& status) {
  if (answered_.exchange(true)) return;
  const absl::Duration duration = absl::Now() - start_;
  metrics_->RecordRequest(model_, method_, status.code(), duration);
  in_flight_.reset();
  const grpc::Status answer = ToGrpcStatus(status, context_);
  AccessRecord record;
  record.model = model_;
  if (status.ok() && usage_ != nullptr) usage_(&record);
  EndCallLogging(logging_, method_, answer, duration, std::move(record),
                 context_);
  Finish(answer);
}

void UnaryCall::WatchBatcher(std::weak_ptr<batching::Batcher> batcher) {
  absl::MutexLock lock(&batcher_mu_);
  batcher_ = std::move(batcher);
}

void UnaryCall::OnCancel() {
  cancellation_->Cancel();
  std::shared_ptr<batching::Batcher> batcher;
  {
    absl::MutexLock lock(&batcher_mu_);
    batcher = batcher_.lock();
  }
  if (batcher != nullptr) batcher->NotifyCancelled();
}

void UnaryCall::OnDone() {
  OpenCalls* open_calls = accepted_ ? open_calls_ : nullptr;
  delete this;
  // Last: a shutdown waiting for the count may end the process.
  if (open_calls != nullptr) open_calls->End();
}

}  // namespace favor::service
