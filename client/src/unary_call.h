// UnaryCall: one asynchronous unary RPC of a Client with its retries, and
// CallFavor, which makes every favor.v1.Favor call one. Each attempt goes to
// the next channel (round-robin) with a fresh ClientContext; a retryable
// failure waits on the client's timer (RetryDelay: backoff, jitter, the
// server's `retry-after-ms` hint, never past the deadline) and tries again;
// the result is converted and handed to the callback once, after which the
// call deletes itself.
#ifndef FAVOR_CLIENT_SRC_UNARY_CALL_H_
#define FAVOR_CLIENT_SRC_UNARY_CALL_H_

#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client_impl.h"
#include "convert.h"
#include "favor/call_options.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/status.h"
#include "retry.h"

namespace favor::client_internal {

// Whether a call is retried.
enum class Retries {
  // The client's RetryOptions apply.
  kAsConfigured,
  // One attempt only (health checks report the state of the moment).
  kNone,
};

struct UnaryCallSettings {
  absl::Time deadline = absl::InfiniteFuture();
  bool wait_for_ready = false;
  Retries retries = Retries::kAsConfigured;
};

template <typename Request, typename Response, typename Result>
class UnaryCall final : public CallBase {
 public:
  // Starts the RPC on `channel` with the given context, request, response
  // and completion callback (a stub's async() method, bound).
  using Start =
      std::function<void(size_t channel, grpc::ClientContext*, const Request*,
                         Response*, std::function<void(grpc::Status)>)>;
  // Makes the result of a successful response.
  using Convert = std::function<absl::StatusOr<Result>(const Response&)>;

  // Runs the call; `done` gets its result exactly once.
  static void Run(Client::Impl* client, Request request,
                  const UnaryCallSettings& settings, Start start,
                  Convert convert, Callback<Result> done) {
    auto* call =
        new UnaryCall(client, std::move(request), settings, std::move(start),
                      std::move(convert), std::move(done));
    if (!client->Register(call)) {
      call->Finish(absl::CancelledError("the favor::Client is shutting down"),
                   /*registered=*/false);
      return;
    }
    call->Attempt();
  }

  void Cancel() override {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }

 private:
  UnaryCall(Client::Impl* client, Request request,
            const UnaryCallSettings& settings, Start start, Convert convert,
            Callback<Result> done)
      : client_(client),
        request_(std::move(request)),
        settings_(settings),
        start_(std::move(start)),
        convert_(std::move(convert)),
        done_(std::move(done)) {}

  void Attempt() {
    grpc::ClientContext* context = nullptr;
    {
      absl::MutexLock lock(&mu_);
      if (!cancelled_) {
        ++attempts_;
        context_ = std::make_unique<grpc::ClientContext>();
        context = context_.get();
        client_->PrepareContext(settings_.deadline, settings_.wait_for_ready,
                                context);
        response_.Clear();
      }
    }
    if (context == nullptr) {
      Finish(absl::CancelledError("the favor::Client is shutting down"));
      return;
    }
    start_(client_->NextChannel(), context, &request_, &response_,
           [this](grpc::Status status) { OnDone(status); });
  }

  void OnDone(const grpc::Status& grpc_status) {
    if (grpc_status.ok()) {
      Finish(convert_(response_));
      return;
    }
    const absl::Status status = FromGrpcStatus(grpc_status);
    std::optional<absl::Duration> delay;
    {
      absl::MutexLock lock(&mu_);
      if (settings_.retries == Retries::kAsConfigured && !cancelled_) {
        delay = RetryDelay(client_->options().retry, attempts_, status,
                           RetryHint(*context_), absl::Now(),
                           settings_.deadline, client_->jitter());
      }
    }
    if (!delay.has_value()) {
      Finish(status);
      return;
    }
    client_->timer().Schedule(absl::Now() + *delay, [this] { Attempt(); });
  }

  // Hands `result` to the callback, leaves the registry and deletes the
  // call. Runs with mu_ not held.
  //
  // The ClientContext goes first: it holds a reference to the channel, and
  // once the call has left the registry ~Client may drop its own. Were the
  // context's reference the last, the channel (and with it, possibly, gRPC
  // itself) would be shut down on a gRPC thread after ~Client returned,
  // racing with the exit of the program.
  void Finish(absl::StatusOr<Result> result, bool registered = true) {
    {
      absl::MutexLock lock(&mu_);
      context_.reset();
    }
    Callback<Result> done = std::move(done_);
    done(std::move(result));
    if (registered) client_->Unregister(this);
    delete this;
  }

  Client::Impl* const client_;
  const Request request_;
  const UnaryCallSettings settings_;
  const Start start_;
  const Convert convert_;
  Callback<Result> done_;
  // Written by one attempt at a time; read when it completes.
  Response response_;

  absl::Mutex mu_;
  std::unique_ptr<grpc::ClientContext> context_ ABSL_GUARDED_BY(mu_);
  int attempts_ ABSL_GUARDED_BY(mu_) = 0;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

// A method of the Favor stub's callback API, e.g.
// &v1::Favor::Stub::async::Embed.
template <typename Request, typename Response>
using FavorMethod = void (v1::Favor::Stub::async::*)(
    grpc::ClientContext*, const Request*, Response*,
    std::function<void(grpc::Status)>);

// The one path of every favor.v1.Favor RPC: `method` with `request` as a
// UnaryCall under `call`'s deadline and the client's retries; `done` gets
// FromProto of the response (convert.h).
template <typename Result, typename Request, typename Response>
void CallFavor(Client::Impl* client, FavorMethod<Request, Response> method,
               Request request, const CallOptions& call,
               Callback<Result> done) {
  UnaryCall<Request, Response, Result>::Run(
      client, std::move(request),
      UnaryCallSettings{client->DeadlineFor(call), call.wait_for_ready,
                        Retries::kAsConfigured},
      [client, method](size_t channel, grpc::ClientContext* context,
                       const Request* sent, Response* received,
                       std::function<void(grpc::Status)> on_done) {
        (client->stub(channel).async()->*method)(context, sent, received,
                                                 std::move(on_done));
      },
      [](const Response& response) -> absl::StatusOr<Result> {
        return FromProto(response);
      },
      std::move(done));
}

}  // namespace favor::client_internal

#endif  // FAVOR_CLIENT_SRC_UNARY_CALL_H_
