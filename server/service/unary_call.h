// The reactor of one unary Favor call. Handlers create it, start the work
// (which never blocks) and return it; whoever finishes the work calls
// Answer() once, from any thread (usually a batch worker through a request's
// done callback). Answer() records the call's metrics (favor_requests_total,
// favor_request_duration_seconds) and finishes the RPC; the reactor deletes
// itself when gRPC is done with it.
//
// Shutdown: the call Begin()s in `open_calls` when it is created (accepted()
// is false once the service has stopped accepting calls: answer it
// UNAVAILABLE) and, if accepted, End()s in OnDone, once gRPC has sent its
// status.
//
// Cancellation: when the client cancels (or its deadline passes), gRPC calls
// OnCancel, which sets the call's CancellationFlag (shared with every
// batching::Request of the call) and wakes the batcher that holds them, so
// that queued work is dropped at once.
#ifndef FAVOR_SERVER_SERVICE_UNARY_CALL_H_
#define FAVOR_SERVER_SERVICE_UNARY_CALL_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "server/batching/batcher.h"
#include "server/batching/request.h"
#include "absl/functional/any_invocable.h"
#include "server/common/access_log.h"
#include "server/metrics/metrics.h"
#include "server/service/call_log.h"
#include "server/service/open_calls.h"

namespace favor::service {

// The gRPC deadline of a call as an absl::Time (InfiniteFuture when none).
absl::Time DeadlineOf(const grpc::ServerContextBase& context);

class UnaryCall final : public grpc::ServerUnaryReactor {
 public:
  // `metrics` (not null; Metrics::Noop() records nothing) and `open_calls`
  // (not null) must outlive the call.
  UnaryCall(grpc::CallbackServerContext* context, metrics::Metrics* metrics,
            absl::string_view method, OpenCalls* open_calls);

  // False: the service had stopped accepting calls when this one came.
  bool accepted() const { return accepted_; }

  // The model label of the call's metrics; set before the work starts.
  void set_model(absl::string_view model) { model_ = std::string(model); }
  // The batcher to wake on cancellation; set before enqueueing into it.
  // Weak: a reload may free the batcher of a revision once this call is
  // answered, and gRPC may report a cancellation after that.
  void WatchBatcher(std::weak_ptr<batching::Batcher> batcher);

  // How the call is logged (call_log.h); set before the work starts.
  void set_logging(CallLogging logging) { logging_ = std::move(logging); }
  const CallLogging& logging() const { return logging_; }
  // Fills the access-log record's counts and times from the answer, when
  // the call is answered OK; set before the work starts.
  void ReportUsage(absl::AnyInvocable<void(AccessRecord*) const> usage) {
    usage_ = std::move(usage);
  }

  const std::shared_ptr<batching::CancellationFlag>& cancellation() const {
    return cancellation_;
  }
  // The gRPC deadline as an absl::Time (InfiniteFuture when none).
  absl::Time deadline() const;

  // Finishes the call with `status`; the first call wins, later ones are
  // ignored.
  void Answer(const absl::Status& status);

  void OnCancel() override;
  void OnDone() override;

 private:
  grpc::CallbackServerContext* const context_;
  metrics::Metrics* const metrics_;
  OpenCalls* const open_calls_;
  const bool accepted_;
  const std::string method_;
  std::string model_;
  const absl::Time start_;
  // Reset when the call is answered, not when gRPC lets the reactor go.
  std::optional<metrics::Metrics::InFlightGuard> in_flight_;
  std::shared_ptr<batching::CancellationFlag> cancellation_;
  absl::Mutex batcher_mu_;
  std::weak_ptr<batching::Batcher> batcher_ ABSL_GUARDED_BY(batcher_mu_);
  std::atomic<bool> answered_{false};
  CallLogging logging_;
  absl::AnyInvocable<void(AccessRecord*) const> usage_;
};

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_UNARY_CALL_H_
